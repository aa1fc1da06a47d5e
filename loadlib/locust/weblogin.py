"""`--web-login` for the Locust web UI: one username and password, both from the environment (docs/webui.md).

Locust brings the login page and the session (Flask-Login) but no way to check a password; this supplies it. Nothing
is built in: with `--web-login` and either variable unset the run stops with one line before any load. Every route
loadlib adds is wrapped in Locust's `auth_required_if_enabled`, so it answers like Locust's own pages without a login.
"""

from __future__ import annotations

import hmac
import os
import secrets
from typing import Any

from flask import Blueprint, redirect, request, session, url_for
from flask_login import UserMixin, login_user
from werkzeug.wrappers.response import Response as WerkzeugResponse

from loadlib.errors import ConfigError

USER_ENV = "LLM_WEB_USERNAME"
PASSWORD_ENV = "LLM_WEB_PASSWORD"
CALLBACK = "/llm/login"
REFUSED = "Wrong username or password"


class WebUser(UserMixin):
    def __init__(self, name: str) -> None:
        self.id = name


def credentials() -> tuple[str, str]:
    """The username and password from the environment; ConfigError (one line) when either is missing."""
    user, password = os.environ.get(USER_ENV, ""), os.environ.get(PASSWORD_ENV, "")
    if not user or not password:
        missing = " and ".join(name for name, value in ((USER_ENV, user), (PASSWORD_ENV, password)) if not value)
        raise ConfigError(f"--web-login needs {missing} set in the environment (no default login is built in)")
    return user, password


def matches(given: str, expected: str) -> bool:
    """Constant-time comparison, so the time taken does not tell how much of a guess was right."""
    return hmac.compare_digest(given.encode(), expected.encode())


def install_login(web_ui: Any) -> None:
    """Check the credentials exist, then let Locust's login page sign in with them (a no-op without --web-login)."""
    if not web_ui.web_login:
        return
    user, password = credentials()
    web_ui.app.secret_key = web_ui.app.secret_key or secrets.token_bytes(32)  # signs sessions; lives with the process
    web_ui.login_manager.user_loader(lambda name: WebUser(name) if matches(name, user) else None)
    web_ui.auth_args = {**web_ui.auth_args, "username_password_callback": CALLBACK}
    blueprint = Blueprint("llm_login", __name__)

    @blueprint.route(CALLBACK, methods=["POST"])
    def _login() -> WerkzeugResponse:
        given_user, given_password = request.form.get("username", ""), request.form.get("password", "")
        if matches(given_user, user) & matches(given_password, password):
            login_user(WebUser(user))
            return redirect(url_for("locust.index"))
        session["auth_error"] = REFUSED
        return redirect(url_for("locust.login"))

    web_ui.app.register_blueprint(blueprint)

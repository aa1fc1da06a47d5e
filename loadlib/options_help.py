"""The option registry rendered for people: `python -m loadlib --help` and docs/options.md (a test keeps the file
equal to `python -m loadlib --markdown`). Kept apart from the registry, which every Locust process imports."""

from __future__ import annotations

import argparse

from loadlib.option import argparse_text
from loadlib.options import groups


def help_parser() -> argparse.ArgumentParser:
    """A parser that only prints help: every option, grouped, with its environment variable and default."""
    out = argparse.ArgumentParser(
        prog="python -m loadlib",
        usage="locust -f locustfiles/<scenario>.py [LOCUST OPTIONS] [THE OPTIONS BELOW]",
        description="Options loadlib adds to Locust. Each is accepted by every locustfile that uses LLMUser, on the "
        "command line, in locust.conf / pyproject.toml [tool.locust], and as the environment variable shown. "
        "Keys are never options: they come from the variable that --llm-api-key-env names. Locust's own options: "
        "locust --help. Definitions of every metric: docs/metrics.md.",
        add_help=False,
    )
    for title, options in groups():
        group = out.add_argument_group(title)
        for option in options:
            default = "" if option.flag_only or option.default in ("", None) else f" (default: {option.default})"
            text = argparse_text(f"{option.help}{default} [{option.env_var}]")
            group.add_argument(option.flag, help=text, action="store_true")
    return out


def markdown() -> str:
    """docs/options.md: one table per group."""
    lines = [
        "# Options",
        "",
        "Generated from `loadlib/options.py` by `python -m loadlib --markdown` (a test keeps this file equal to it).",
        "Every option works with every locustfile, on the command line, in `locust.conf` / `pyproject.toml",
        "[tool.locust]`, and as the environment variable shown (`LLM_` + the name without `--` and `llm-`).",
    ]
    for title, options in groups():
        lines += ["", f"## {title}", "", "| option | environment | default | what it does |", "|---|---|---|---|"]
        for o in options:
            default = "off" if o.flag_only else (f"`{o.default}`" if o.default not in ("", None) else "")
            text = o.help.replace("|", "\\|")
            lines.append(f"| `{o.flag}` | `{o.env_var}` | {default} | {text} |")
    return "\n".join(lines) + "\n"

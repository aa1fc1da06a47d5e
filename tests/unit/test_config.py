import pytest

from loadlib.config import Timeouts, make_endpoint, parse_base_url
from loadlib.errors import ConfigError


def test_base_url_parts():
    assert parse_base_url("http://127.0.0.1:8000/v1/") == ("http", "127.0.0.1", 8000, "/v1")
    assert parse_base_url("https://api.anthropic.com") == ("https", "api.anthropic.com", 443, "")


@pytest.mark.parametrize("url", ["", "ftp://x", "api.openai.com/v1", "http://", "http://h:99999", "http://h/v1?x=1"])
def test_malformed_base_url_is_one_clear_line(url):
    with pytest.raises(ConfigError) as err:
        parse_base_url(url)
    assert "\n" not in str(err.value)
    assert "base URL" in str(err.value)


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("http://127.0.0.1:8001/v1", "127.0.0.1:8001"),
        ("http://127.0.0.1:8002/v1", "127.0.0.1:8002"),
        ("https://api.openai.com/v1", "api.openai.com"),
        ("https://api.openai.com:443/v1", "api.openai.com"),
        ("http://gw.internal:443/v1", "gw.internal:443"),
        ("http://[::1]:8000/v1", "[::1]:8000"),
    ],
)
def test_default_name_keeps_the_port_that_tells_two_local_servers_apart(url, name):
    assert make_endpoint(url, api_key_env="none").name == name
    assert make_endpoint(url, api_key_env="none", name="mock").name == "mock"


def test_unknown_provider():
    with pytest.raises(ConfigError, match="unknown provider 'gemini': use one of openai, anthropic"):
        make_endpoint("http://h/v1", provider="gemini", api_key_env="none")


def test_missing_key_variable_names_the_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        make_endpoint("https://api.openai.com/v1", provider="openai")
    monkeypatch.setenv("MY_KEY", "sk-test")
    ep = make_endpoint("https://api.openai.com/v1", api_key_env="MY_KEY")
    assert ep.api_key() == "sk-test"
    assert "sk-test" not in repr(ep)


def test_no_key_servers():
    ep = make_endpoint("http://127.0.0.1:8000/v1", api_key_env="none")
    assert ep.api_key() is None and ep.api_key_env is None


def test_timeouts_positive():
    with pytest.raises(ConfigError, match="timeout idle"):
        Timeouts(idle=0)


def test_credentials_in_the_url_are_refused_without_echoing_them():
    with pytest.raises(ConfigError) as err:
        parse_base_url("https://user:s3cret@api.example.com/v1")
    assert "s3cret" not in str(err.value)

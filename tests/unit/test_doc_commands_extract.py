"""How tests/support/doc_commands.py reads commands out of Markdown and turns them into runs: what the shell would
see (continuations, chains, comments, assignments, placeholders), the `# needs:` marker, which commands run on the
embedded mock, and the argv a test runs (10 s, capped users, outputs in a temporary directory; the mock and its curl
probes on a free port; a web UI on a free port)."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support.doc_commands import (
    Command,
    curl_port,
    doc_commands,
    fenced_blocks,
    follow_ups,
    is_install,
    is_load_test,
    is_mock_server,
    is_shell_syntax,
    marker_problems,
    mock_for,
    prepare,
    prepare_curl,
    prepare_master,
    prepare_mock,
    prepare_tool,
    prepare_web_ui,
    prepare_worker,
    producer,
    selection,
    strip_comment,
    tool_inputs,
    workers_for,
    yaml_after,
)

FENCE = "```"


def md(lang: str, *lines: str) -> str:
    """A Markdown document with one fenced block."""
    return "\n".join(["# Title", "", FENCE + lang, *lines, FENCE, ""])


def argvs(markdown: str) -> list[tuple[str, ...]]:
    return [c.argv for c in doc_commands(markdown, "doc.md")]


def command(text: str, source: str = "doc.md") -> Command:
    """The one command of a bash block holding `text`."""
    (found,) = [c for c in doc_commands(md("bash", text), source) if is_load_test(c)]
    return found


def test_only_shell_blocks_count_and_lines_are_the_files() -> None:
    doc = "\n".join(["intro", FENCE, "locust -f a.py", FENCE, FENCE + "yaml", "a: 1", FENCE, md("console", "$ ls")])
    assert [(b.lang, b.first_line) for b in fenced_blocks(doc)] == [("", 3), ("yaml", 6), ("console", 11)]
    assert argvs(doc) == [("ls",)]
    assert [c.line for c in doc_commands(md("sh", "", "locust -f a.py"), "d")] == [5]


def test_continuations_join_lines_and_keep_the_first_line_number() -> None:
    doc = md("bash", "locust -f a.py --headless \\", "  -u 4 \\", "  -t 60s   # comment", "echo next")
    first, second = doc_commands(doc, "doc.md")
    assert first.argv == ("locust", "-f", "a.py", "--headless", "-u", "4", "-t", "60s")
    assert (first.line, second.line) == (4, 7)


def test_a_trailing_operator_or_an_open_quote_reads_on() -> None:
    doc = md("bash", "pip install x &&", "  locust -f a.py --llm-threshold 'ttft p95", "< 1s'")
    assert argvs(doc) == [("pip", "install", "x"), ("locust", "-f", "a.py", "--llm-threshold", "ttft p95 < 1s")]


def test_chains_and_background_split_into_commands() -> None:
    doc = md("bash", "python3 -m pip install -e . && python3 -m locust -f a.py --headless; echo done &")
    found = doc_commands(doc, "doc.md")
    assert [c.argv[:3] for c in found] == [("python3", "-m", "pip"), ("python3", "-m", "locust"), ("echo", "done")]
    assert [c.background for c in found] == [False, False, True]
    assert [is_load_test(c) for c in found] == [False, True, False]


def test_a_loop_body_is_a_command() -> None:
    doc = md("bash", "for i in 1 2; do locust -f a.py --worker --master-host 127.0.0.1 & done")
    assert ("locust", "-f", "a.py", "--worker", "--master-host", "127.0.0.1") in argvs(doc)


def test_comments_start_at_a_word_outside_quotes() -> None:
    assert strip_comment("locust -f a.py   # web UI") == "locust -f a.py"
    assert strip_comment("locust --llm-mock 'a#b' x#y") == "locust --llm-mock 'a#b' x#y"
    assert strip_comment("# only a comment") == ""


def test_console_blocks_keep_prompt_lines_only() -> None:
    assert argvs(md("console", "$ locust -f a.py --headless", "Verdict: PASS", "$ echo ok")) == [
        ("locust", "-f", "a.py", "--headless"),
        ("echo", "ok"),
    ]


def test_assignments_and_exports_become_the_environment() -> None:
    doc = md("bash", "export A=1 B='two words'", "C=3 locust -f a.py", "locust -f b.py")
    first, second = doc_commands(doc, "doc.md")
    assert (dict(first.env), first.argv) == ({"A": "1", "B": "two words", "C": "3"}, ("locust", "-f", "a.py"))
    assert dict(second.env) == {"A": "1", "B": "two words"}


def test_python_m_locust_in_every_spelling_is_a_load_test() -> None:
    for prefix in ("locust", "python -m locust", "python3 -m locust", "python3.11 -m locust"):
        assert is_load_test(command(f"{prefix} -f a.py"))
    assert not any(is_load_test(c) for c in doc_commands(md("bash", "python -m loadlib report x", "pylocust"), "d"))


def test_headless_runs_on_the_mock_are_selected(tmp_path: Path) -> None:
    assert selection(command("locust -f a.py --headless -u 4 -t 60s --llm-mock ttft_ms=5"), {}, tmp_path) is None


def test_what_is_not_run_says_why(tmp_path: Path) -> None:
    reasons = {
        "locust -f a.py --class-picker": "web UI only",
        "locust -f a.py --headless --host https://api.openai.com/v1": "remote endpoint",
        "locust -f a.py --headless --host=http://127.0.0.1:8000/v1": "local server of yours",
        "LLM_BASE_URL=https://x.example/v1 locust -f a.py --headless": "LLM_BASE_URL",
        "locust -f a.py --headless --master --expect-workers 2": "distributed",
        "locust -f a.py --headless --llm-api-key-env MY_KEY": "$MY_KEY",
        "OPENAI_API_KEY=sk-x locust -f a.py --headless": "needs OPENAI_API_KEY",
        "locust -f a.py --headless -u $USERS": "placeholder '$USERS'",
        "INFLUX_URL=... locust -f a.py --headless": "placeholder '...'",
        "locust -f a.py --headless --llm-pool pool.yaml": "the reader's own file",
        "locust -f a.py --headless > out.txt": "redirection",
    }
    for text, reason in reasons.items():
        assert reason in (selection(command(text), {}, tmp_path) or ""), text


def test_a_pool_runs_when_documented_and_all_mocks(tmp_path: Path) -> None:
    mocks = "endpoints:\n  - {name: a, mock: {ttft_ms: 40}}\n  - {name: b, mock: {}}\n"
    real = "endpoints:\n  - {name: a, mock: {}}\n  - {name: p, base_url: https://api.example.com/v1}\n"
    pooled = command("locust -f a.py --headless --llm-pool pool.yaml")
    assert selection(pooled, {"pool.yaml": mocks}, tmp_path) is None
    assert "['p'] are not embedded mocks" in (selection(pooled, {"pool.yaml": real}, tmp_path) or "")
    inline = command("locust -f a.py --headless --llm-pool '{endpoints: [{name: a, mock: {}}]}'")
    assert selection(inline, {}, tmp_path) is None


def test_prepare_runs_ten_seconds_with_few_users_and_outputs_in_tmp(tmp_path: Path) -> None:
    cmd = command(
        "python3 -m locust -f a.py --headless -u 200 -r 50 -t 5m --llm-summary results/s.json "
        "--llm-report=/abs/report.html --audit-file none --llm-pool pool.yaml"
    )
    prepared = prepare(cmd, tmp_path, {"pool.yaml": "endpoints: []\n"})
    assert prepared.argv == [
        *(sys.executable, "-m", "locust", "-f", "a.py", "--headless", "-u", "10", "-r", "50", "-t", "10s"),
        *("--llm-summary", str(tmp_path / "results/s.json"), f"--llm-report={tmp_path / 'report.html'}"),
        *("--audit-file", "none", "--llm-pool", str(tmp_path / "pool.yaml")),
    ]
    assert (tmp_path / "results").is_dir()
    assert (tmp_path / "pool.yaml").read_text() == "endpoints: []\n"
    assert prepared.env == {}


def test_prepare_adds_a_run_time_and_keeps_small_user_counts(tmp_path: Path) -> None:
    prepared = prepare(command("A=1 locust -f a.py --headless --users 4"), tmp_path, {})
    assert prepared.argv[3:] == ["-f", "a.py", "--headless", "--users", "4", "-t", "10s"]
    assert prepared.env == {"A": "1", "LLM_AUDIT_FILE": str(tmp_path / "results" / "audit-{run_id}.jsonl")}


def test_a_tool_reading_the_runs_file_follows_it(tmp_path: Path) -> None:
    doc = md(
        "bash",
        "locust -f a.py --headless --llm-summary s.json --llm-report report.html",
        "python -m loadlib report records-*.jsonl s.json -o report.html",
        "python -m loadlib compare openai.json anthropic.json -o cmp.html",
    )
    found = doc_commands(doc, "doc.md")
    assert follow_ups(found, found[0]) == [found[1]]
    (tmp_path / "records-b.jsonl").write_text("")
    (tmp_path / "records-a.jsonl").write_text("")
    assert prepare_tool(found[1], tmp_path) == [
        *(sys.executable, "-m", "loadlib", "report", "records-a.jsonl", "records-b.jsonl", "s.json"),
        *("-o", "report.html"),
    ]
    assert prepare_tool(found[2], tmp_path)[4:6] == ["openai.json", "anthropic.json"]


def test_an_unmatched_glob_stays_as_written(tmp_path: Path) -> None:
    tool = doc_commands(md("bash", "python -m loadlib report records-*.jsonl"), "d")[0]
    assert prepare_tool(tool, tmp_path)[-1] == "records-*.jsonl"


def test_yaml_after_finds_the_documented_file() -> None:
    doc = "\n".join(["Try it on mocks:", "", FENCE + "yaml", "policy: weighted", FENCE, FENCE + "yaml", "b: 2", FENCE])
    assert yaml_after(doc, "Try it on mocks") == "policy: weighted\n"
    assert yaml_after(doc, "not there") is None


def test_a_master_gets_the_workers_of_its_block(tmp_path: Path) -> None:
    doc = md(
        "bash",
        "locust -f a.py --master --headless -u 200 -t 5m --expect-workers 4 --llm-summary results/s.json &",
        "for i in 1 2 3 4; do locust -f a.py --worker --master-host 127.0.0.1 & done",
    )
    found = doc_commands(doc, "doc.md")
    worker, count = workers_for(found, found[0]) or (None, 0)
    assert (worker, count) == (found[2], 4)
    master = prepare_master(found[0], tmp_path, 5600, 2)
    assert master.argv[3:] == [
        *("-f", "a.py", "--master", "--headless", "-u", "10", "-t", "10s", "--expect-workers", "2"),
        *("--llm-summary", str(tmp_path / "results/s.json"), "--master-bind-port", "5600"),
    ]
    assert prepare_worker(found[2], 5600)[3:] == [
        *("-f", "a.py", "--worker", "--master-host", "127.0.0.1", "--master-port", "5600"),
    ]
    assert workers_for(found, found[2]) == (found[2], 4)
    assert workers_for(doc_commands(md("bash", "locust -f a.py --master"), "doc.md"), found[0]) is None


def needs(markdown: str) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """(argv, marker) of each command."""
    return [(c.argv, c.needs) for c in doc_commands(markdown, "doc.md")]


def test_a_marker_on_the_blocks_first_line_marks_every_command() -> None:
    doc = md("bash", "", "# needs: Docker, a Kubernetes cluster", "docker build .", "kubectl apply -k x  # apply")
    assert needs(doc) == [
        (("docker", "build", "."), ("Docker", "a Kubernetes cluster")),
        (("kubectl", "apply", "-k", "x"), ("Docker", "a Kubernetes cluster")),
    ]


def test_a_marker_on_a_commands_line_marks_that_command_only() -> None:
    doc = md(
        "bash",
        "locust -f a.py --headless",
        "locust -f a.py \\",
        "  --host https://x/v1  # needs: a real endpoint (yours)",
    )
    assert needs(doc) == [
        (("locust", "-f", "a.py", "--headless"), ()),
        (("locust", "-f", "a.py", "--host", "https://x/v1"), ("a real endpoint",)),
    ]


def test_a_comment_that_only_mentions_needs_is_no_marker() -> None:
    doc = md("bash", "# this needs: nothing", "curl -s localhost:8000/health   # needs a server")
    assert needs(doc) == [(("curl", "-s", "localhost:8000/health"), ())]
    assert marker_problems(doc, "doc.md") == []


def test_misspelt_or_misplaced_markers_are_problems() -> None:
    doc = md("bash", "# needs: a GPU", "kubectl get pods   # needs: kubernetes", "# needs: Docker", "docker ps")
    problems = marker_problems(doc, "doc.md")
    assert [p.split(":")[1] for p in problems] == ["4", "5", "6"]
    assert "the marker's words are" in problems[0] and "first line" in problems[2]
    assert needs(doc)[0][1] == () and needs(doc)[1][1] == ()


def test_commands_are_sorted_by_what_they_are() -> None:
    doc = md(
        "bash",
        "python3 -m pip install -e . && pip install x",
        "python -m loadlib.mock --port 8001 && llm-mock",
        "for i in 1 2; do echo $i; done",
    )
    pip, pip2, mock, llm_mock, loop, echo, done = doc_commands(doc, "doc.md")
    assert is_install(pip) and is_install(pip2) and not is_install(mock)
    assert is_mock_server(mock) and is_mock_server(llm_mock) and not is_mock_server(pip)
    assert is_shell_syntax(loop) and is_shell_syntax(done) and not is_shell_syntax(echo)


def test_curl_probes_the_mock_of_its_doc_on_its_port() -> None:
    doc = md(
        "bash",
        "python -m loadlib.mock --port 8000",
        "curl -s localhost:8000/health",
        "curl -s -X POST http://127.0.0.1:8001/mock/reset",
        "curl -s https://api.openai.com/v1/models",
    )
    mock, local, other_port, remote = doc_commands(doc, "doc.md")
    assert [curl_port(c) for c in (mock, local, other_port, remote)] == [None, 8000, 8001, None]
    assert mock_for([mock, local, other_port], local) == mock
    assert mock_for([mock, local, other_port], other_port) is None
    default = doc_commands(md("bash", "llm-mock --ttft-ms 5", "curl localhost:8000/health"), "d")
    assert mock_for(default, default[1]) == default[0]


def test_the_mock_and_its_probes_move_to_a_free_port() -> None:
    mock, curl = doc_commands(
        md("bash", "llm-mock --port 8000 --ttft-ms 5", "curl -s 'localhost:8000/mock/truth?limit=5'"), "d"
    )
    assert prepare_mock(mock, 41000) == [sys.executable, "-m", "loadlib.mock", "--port", "41000", "--ttft-ms", "5"]
    assert prepare_curl(curl, 8000, 41000) == [
        *("curl", "--fail-with-body", "--max-time", "10", "-s", "localhost:41000/mock/truth?limit=5"),
    ]
    post = doc_commands(md("bash", "curl -X POST http://127.0.0.1:8000/mock/config -d 'a=8000'"), "d")[0]
    assert prepare_curl(post, 8000, 41000)[-3:] == ["http://127.0.0.1:41000/mock/config", "-d", "a=8000"]


def test_a_web_ui_runs_on_a_free_local_port(tmp_path: Path) -> None:
    web = command("LLM_WEB_USERNAME=op locust -f a.py --web-login --web-port 8089")
    prepared = prepare_web_ui(web, tmp_path, 41001)
    assert prepared.argv[3:] == ["-f", "a.py", "--web-login", "--web-port", "41001", "--web-host", "127.0.0.1"]
    assert prepared.env["LLM_WEB_USERNAME"] == "op" and "LLM_AUDIT_FILE" in prepared.env
    assert selection(command("LLM_WEB_PASSWORD=x locust -f a.py --headless"), {}, tmp_path) is None


def test_a_tool_follows_the_doc_run_that_writes_its_files_in_any_block() -> None:
    doc = "\n".join(
        [
            md("bash", "python -m loadlib compare run.json --pool pool.yaml -o cmp.html --markdown cmp.md"),
            md("bash", "locust -f a.py --headless --llm-summary other/run.json"),
            md("bash", "locust -f a.py --headless --llm-summary run.json --llm-records 'r-{worker}.jsonl'"),
            md("bash", "python -m loadlib report r-*.jsonl -o report.html"),
        ]
    )
    compare, other, run, report = doc_commands(doc, "doc.md")
    assert tool_inputs(compare) == ["run.json", "pool.yaml"]
    assert producer([compare, other, run, report], compare) == run
    assert producer([compare, other, run, report], report) == run
    assert follow_ups([compare, other, run, report], run) == [compare, report]
    assert follow_ups([compare, other, run, report], other) == []

"""A Python orchestrator's client of `faultline serve`, standard library only: classify a
batch of failures as JSON lines, then feed a recovery session its events and read it back.

    FAULTLINE_URL=http://127.0.0.1:8462 python3 examples/clients/python/client.py
"""

import json
import os
import sys
import urllib.request

BASE = os.environ.get("FAULTLINE_URL", "http://127.0.0.1:8462")


def call(method, path, body=None, content_type="application/json"):
    request = urllib.request.Request(BASE + path, data=body, method=method)
    request.add_header("Content-Type", content_type)
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read().decode()


def main():
    batch = [
        {"id": "a", "http_status": 529},
        {"id": "b", "phase": "not-a-phase"},
        {"id": "c", "http_status": 401},
    ]
    lines = "".join(json.dumps(item) + "\n" for item in batch).encode()
    answers = [json.loads(line) for line in call("POST", "/v1/classify", lines, "application/x-ndjson").splitlines()]
    assert [answer.get("id") for answer in answers] == ["a", "b", "c"], answers
    assert answers[1]["error"]["field"] == "phase", answers[1]
    for answer in answers:
        print(answer["id"], answer.get("code") or "error: " + answer["error"]["message"][:60])

    session = "/v1/sessions/python-client"
    events = [
        {"provider_id": "claude-acp", "event": "prompt_began", "execution_id": "exec-1", "generation": 1},
        {"event": "retry_scheduled", "reason": "Provider overloaded", "provider": "anthropic",
         "attempt": 1, "max_attempts": 5, "deadline": "2099-01-01T00:00:00Z"},
    ]
    for event in events:
        answer = json.loads(call("POST", session + "/events", json.dumps(event).encode()))
    assert answer["wait"]["deadline"] == "2099-01-01T00:00:00Z", answer
    state = json.loads(call("GET", session))
    waits = json.loads(call("GET", "/v1/waits"))["waits"]
    assert state["events"] == 2 and any(wait["session"] == "python-client" for wait in waits), (state, waits)
    print("session", state["session"], "events", state["events"], "wait until", state["wait"]["deadline"])


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # noqa: BLE001 - a client test reports any failure and exits 1
        print("python client failed:", error, file=sys.stderr)
        sys.exit(1)

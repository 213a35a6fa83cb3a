#!/usr/bin/env python3
"""A small OpenAI-compatible chat endpoint to point Mirage at (standard library only).

It answers POST /v1/chat/completions the way a model must answer Mirage: one JSON object
{"thought": ..., "action": {...}} as the message text (JSON mode), or the same object as
the arguments of a call of the tool `act` when the request offers tools (tool calling).
Its "model" is a placeholder rule: it follows the first few links of the case it has not
read yet, then gives the first verdict the page offers. Swap `reply` for a real model.

    python3 examples/openai_endpoint.py --port 8400
    # then, in a config file:  [endpoints.mine]  base_url = "http://127.0.0.1:8400/v1"  model = "rule"
"""

import argparse
import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def reply(messages, max_pages=4):
    """The next action, from the conversation Mirage sent."""
    pages = [m["content"] for m in messages if m["role"] == "user" and "Current page:" in (m.get("content") or "")]
    page = pages[-1] if pages else ""
    read = set(re.findall(r"^URL: (\S+)$", "\n".join(pages), re.M))
    if len(pages) < max_pages:
        for number, url in re.findall(r"^\[(\d+)\] .* -> (\S+)$", page, re.M):
            if url.rstrip("/") not in {r.rstrip("/") for r in read}:
                return {"thought": f"link {number} may hold evidence", "action": {"type": "click", "link": int(number)}}
    offered = re.search(r"ACTION one of: (.+)$", page, re.M)
    verdict = offered.group(1).split(",")[0].strip() if offered else "ESCALATE"
    return {"thought": "enough read", "action": {"type": "verdict", "verdict": verdict,
                                                 "rationale": f"Decided after reading {len(pages)} pages."}}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        if not self.path.endswith("/chat/completions"):
            self.send_error(404)
            return
        request = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        answer = reply(request["messages"])
        if request.get("tools"):
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call-1", "type": "function", "function": {"name": "act", "arguments": json.dumps(answer)}}]}
        else:
            message = {"role": "assistant", "content": json.dumps(answer)}
        body = json.dumps({
            "id": "rule-1", "object": "chat.completion", "model": request.get("model", "rule"),
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8400, help="0 picks a free port")
    args = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"listening on http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()

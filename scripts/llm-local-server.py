#!/usr/bin/env python3
"""A local stand-in for a hosted LLM (standard library only), for trying the LLM path of
`epimine run` where no model is reachable: it speaks OpenAI chat completions
(POST /v1/chat/completions) and the Anthropic Messages API (POST /v1/messages) and answers the
episode prompt of the paper's appendix G the way a model would be asked to — one episode per
segment group (at most the prompt's k), with a five-field title, keywords and example sentences
taken from the group. It is not a model: the episodes it returns are the input groups.

    python3 scripts/llm-local-server.py [--port 8000]   # prints its URL, serves until killed
"""
import argparse
import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STOP = set("the a an and or of to in on at for with by from that this was were is are be been has have had it its as after over".split())


def answer(prompt):
    groups, k = [], 2
    m = re.search(r"at most (\d+) potential episodes", prompt)
    if m:
        k = int(m.group(1))
    for line in prompt.splitlines():
        if line.startswith("Group ") and line.endswith(":"):
            groups.append([])
        elif line.startswith("- ") and groups:
            groups[-1].append(line[2:])
        elif line.startswith("Task:"):
            break
    everything = [t for g in groups for t in g]
    episodes = []
    for i, g in enumerate(groups[: max(k, 2)]):
        words = []
        for t in g:
            for w in re.findall(r"[a-z]{4,}", t.lower()):
                if w not in STOP and w not in words:
                    words.append(w)
        words = (words + [f"term{j}" for j in range(5)])[:8]
        examples = g[:3] if len(g) >= 2 else g + [t for t in everything if t not in g][:1]
        episodes.append({
            "title": [f"group {i + 1}", words[0], words[1], "unknown time", "unknown place"],
            "keywords": words,
            "example_sentences": examples,
        })
    while len(episodes) < 2:
        episodes.append(dict(episodes[-1]))
    return "<answer>\n" + json.dumps(episodes, indent=1) + "\n</answer>"


class Handler(BaseHTTPRequestHandler):
    requests = 0

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        Handler.requests += 1
        prompt = body.get("messages", [{}])[0].get("content", "")
        text = answer(prompt)
        # Sizes for scripts/llm-smoke.sh's token figures (the first message is the prompt).
        print(f"sizes prompt_chars={len(prompt)} answer_chars={len(text)}", file=sys.stderr, flush=True)
        if self.path.endswith("/messages"):
            out = {"type": "message", "role": "assistant", "content": [{"type": "text", "text": text}]}
        else:
            out = {"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    print(f"{Handler.requests} requests", file=sys.stderr)


if __name__ == "__main__":
    main()

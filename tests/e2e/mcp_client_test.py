#!/usr/bin/env python3
"""`kernelpro mcp` driven by the official MCP Python SDK (e2e tier, CTest mcp_client).

Usage: mcp_client_test.py KERNELPRO [SDK_DIR]

Starts `kernelpro mcp` over stdio with the SDK's client (SDK_DIR: where scripts/setup.sh put the
`mcp` package, .kp-tools/mcp), then: the handshake; tools/list; build on the gelu example; evaluate
on it (a verdict on a GPU machine, "not run" with exit code 3 without one); search_code and
read_code; list_tasks, show_task; a candidate given as text that does not compile; a path outside
the allowed folders; an unknown tool and wrong argument types (JSON-RPC errors); a cancelled
evaluate; prompts and resources; and after all that the server still answers. On a GPU machine
also analyze and a short optimize_start to its end. Exit 0 on pass, 1 on a failure, 77 (skipped)
without the SDK or nvcc. Writes the transcript of calls and results to $KP_MCP_TRANSCRIPT when set.
"""
import json
import os
import shutil
import sys
import tempfile
import time

KERNELPRO = sys.argv[1] if len(sys.argv) > 1 else "build/kernelpro"
SDK = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "..", "..", ".kp-tools", "mcp")
sys.path.insert(0, os.path.abspath(SDK))
try:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.shared.exceptions import MCPError
except ImportError as e:  # pragma: no cover - the skip path
    print("SKIPPED: the MCP Python SDK is not installed (%s); scripts/test.sh installs it into .kp-tools/mcp" % e)
    sys.exit(77)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GELU = os.path.join(ROOT, "examples", "gelu")
failures = []
transcript = []


def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def call(session, name, args, **kw):
    r = await session.call_tool(name, args, **kw)
    transcript.append({"tool": name, "arguments": args, "isError": r.is_error, "text": text_of(r)[:2000],
                       "structured": r.structured_content})
    return r


async def expect_rpc_error(session, name, args):
    try:
        await session.call_tool(name, args)
    except MCPError as e:
        return e
    return None


async def main():
    if not shutil.which("nvcc") and not os.path.exists("/usr/local/cuda/bin/nvcc"):
        print("SKIPPED: nvcc not found (build and evaluate compile the example)")
        return 77
    env = dict(os.environ)
    env["PATH"] = env.get("PATH", "") + ":/usr/local/cuda/bin"
    with tempfile.TemporaryDirectory(prefix="kp-mcp-") as ws:
        env["XDG_CACHE_HOME"] = os.path.join(ws, "cache")
        params = StdioServerParameters(command=KERNELPRO, args=["mcp", "--workspace", os.path.join(ws, "w")], env=env)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                check(init.server_info.name == "kernelpro", "initialize: server %s, protocol %s" %
                      (init.server_info.name, init.protocol_version))
                tools = {t.name for t in (await session.list_tools()).tools}
                want = {"evaluate", "profile", "analyze", "build", "search_code", "read_code", "list_tasks",
                        "show_task", "optimize_start", "optimize_status", "optimize_stop", "run_history"}
                check(want <= tools, "tools/list has every tool (missing: %s)" % sorted(want - tools))

                r = await call(session, "build", {"task": GELU})
                check(not r.is_error and r.structured_content.get("exit_code") == 0, "build gelu: " + text_of(r)[:120])
                kernels = r.structured_content.get("build", {}).get("kernels", [])
                check(len(kernels) > 0 and "registers" in kernels[0], "build gives the ptxas report per kernel")

                r = await call(session, "evaluate", {"task": GELU})
                code = r.structured_content.get("exit_code")
                gpu = code in (0, 1)
                check(code in (0, 1, 3) and not r.is_error, "evaluate gelu: exit %s, %s" % (code, text_of(r)[:160]))
                if gpu:
                    check(r.structured_content.get("outcome") == "ok", "evaluate on a GPU: the seed is ok")

                r = await call(session, "build", {"task": GELU, "candidate_source": "this is not CUDA\n"})
                check(r.structured_content.get("exit_code") == 1 or r.is_error,
                      "a candidate that does not compile: " + text_of(r)[:160])
                diags = r.structured_content.get("build", {}).get("diagnostics", [])
                check(len(diags) > 0, "... with nvcc's diagnostics (%d)" % len(diags))

                r = await call(session, "evaluate", {"task": "/etc"})
                check(r.is_error and "outside the folders" in text_of(r), "a path outside the allowed folders")

                e = await expect_rpc_error(session, "no_such_tool", {})
                check(e is not None and e.error.code == -32602, "an unknown tool is a JSON-RPC error")
                e = await expect_rpc_error(session, "evaluate", {"task": 7})
                check(e is not None and e.error.code == -32602 and "type string" in e.error.message,
                      "a wrong argument type is a JSON-RPC error: %s" % (e.error.message if e else None))

                r = await call(session, "list_tasks", {})
                ids = [t["id"] for t in r.structured_content["tasks"]]
                check("gelu" in ids and "transpose" in ids, "list_tasks lists the examples")
                r = await call(session, "show_task", {"task": GELU})
                check("seed.cu" in r.structured_content["files"], "show_task shows the seed")

                r = await call(session, "search_code", {"query": "TMA load", "limit": 3})
                if r.is_error:
                    check("CUTLASS" in text_of(r) or "cutlass" in text_of(r), "search_code without CUTLASS says so")
                else:
                    hits = r.structured_content["hits"]
                    check(len(hits) > 0, "search_code finds TMA loads: %s" % (hits[0]["path"] if hits else None))
                    r = await call(session, "read_code", {"path": hits[0]["path"], "start": 1, "end": 5})
                    check(not r.is_error and len(text_of(r)) > 0, "read_code reads its file")

                prompts = [p.name for p in (await session.list_prompts()).prompts]
                check("planner" in prompts and "coder_native" in prompts, "prompts: the roles' templates")
                got = await session.get_prompt("planner")
                check(len(got.messages) == 1, "prompts/get planner")

                # Cancellation: an evaluate whose request is cancelled ends with an error, and the
                # server keeps serving.
                async def cancelled():
                    with anyio.move_on_after(0.5):
                        await session.call_tool("evaluate", {"task": os.path.join(ROOT, "examples", "transpose")})
                        return False
                    return True
                check(await cancelled(), "a cancelled evaluate returns control at once")
                r = await call(session, "list_tasks", {})
                check(not r.is_error, "the server serves after a cancellation")

                if gpu:
                    r = await call(session, "analyze", {"task": GELU})
                    check(not r.is_error, "analyze gelu: " + text_of(r)[:200])
                    r = await call(session, "optimize_start", {"task": GELU, "budget": 3})
                    run_id = r.structured_content["run_id"]
                    for _ in range(240):
                        s = await call(session, "optimize_status", {"run_id": run_id})
                        if s.structured_content["state"] != "running":
                            break
                        await anyio.sleep(1)
                    check(s.structured_content["state"].startswith("ended: ok"), "optimize_start ran to its end: %s" %
                          text_of(s)[:200])
                    h = await call(session, "run_history", {"run_id": run_id})
                    check(len(h.structured_content.get("tree", [])) >= 3, "run_history has the run's tree")
                    res = [x.uri for x in (await session.list_resources()).resources]
                    check(any(str(u).endswith("/best.cu") for u in res), "resources: the run's best kernel")
                await session.send_ping()
                check(True, "ping after everything")
    out = os.environ.get("KP_MCP_TRANSCRIPT")
    if out:
        with open(out, "w") as f:
            json.dump(transcript, f, indent=1, default=str)
    print("%d check(s) failed" % len(failures) if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))

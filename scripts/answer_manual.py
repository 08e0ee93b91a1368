#!/usr/bin/env python3
"""Answer a run's waiting manual-provider prompts with answers a person wrote for the same problem.

    python3 scripts/answer_manual.py RUN_DIR ANSWERS_DIR

RUN_DIR is a run folder of `kernelpro optimize|generate --provider manual` (its prompts are in
RUN_DIR/manual/<key>.prompt.md). ANSWERS_DIR is the manual/ folder of an earlier session on the
same problem, where every prompt was answered by hand (<key>.prompt.md beside <key>.answer.md).

A new run asks with other keys (the prompts hold the new run's measurements), so the answers are
matched by the prompt's role, read from the reply format the prompt asks for: the coder's (and the
debugger's) two code blocks, the analyst's {"tools": ...}, the planner's {"direction": ...}. The
n-th waiting prompt of a role gets the n-th recorded answer of that role, cycling. A prompt whose
role has no recorded answer is left waiting. Prints one line per answer and exits 0 when it wrote
at least one, 1 when there was nothing to answer.
"""
import sys
from pathlib import Path


def role(prompt: str) -> str:
    if "Reply with exactly two code blocks" in prompt:
        return "coder"
    if '"tools"' in prompt:
        return "analyst"
    if '"direction"' in prompt:
        return "planner"
    return ""


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    run, answers = Path(sys.argv[1]), Path(sys.argv[2])
    recorded: dict[str, list[Path]] = {}
    for p in sorted(answers.glob("*.prompt.md")):
        a = p.with_name(p.name.replace(".prompt.md", ".answer.md"))
        if a.is_file():
            recorded.setdefault(role(p.read_text()), []).append(a)
    if not recorded:
        print(f"{answers}: no answered prompts (<key>.prompt.md with <key>.answer.md)", file=sys.stderr)
        return 2
    used: dict[str, int] = {}
    wrote = 0
    for p in sorted((run / "manual").glob("*.prompt.md"), key=lambda p: p.stat().st_mtime):
        a = p.with_name(p.name.replace(".prompt.md", ".answer.md"))
        r = role(p.read_text())
        if r in recorded:  # count the answered ones too, so a resumed run moves on to the next answer
            n = used.get(r, 0)
            used[r] = n + 1
            if not a.exists():
                src = recorded[r][n % len(recorded[r])]
                a.write_text(src.read_text())
                print(f"{a}: the {r}'s answer {src}")
                wrote += 1
        elif not a.exists():
            print(f"{p}: no recorded answer for this prompt's role ('{r or 'unknown'}'); left waiting")
    return 0 if wrote else 1


if __name__ == "__main__":
    sys.exit(main())

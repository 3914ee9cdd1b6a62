"""Print the mutation score per module from a finished ``mutmut run`` (``make mutate``).

mutmut's own summary is one line of counters for the whole run; the question docs/mutation.md
answers is per module (is the money guarded as well as the state machine?), so this reads the
``mutants/**/*.py.meta`` files mutmut leaves behind and prints killed / total per module, the
overall score, and the name of every surviving mutant (``mutmut show NAME`` prints its diff).

Score = killed (including timeouts, which a test run noticed) / all mutants; a mutant that no
selected test reaches counts as surviving, so it lowers the score rather than hiding.
Exit status 1 when the overall score is below ``--min`` (default 0: report only).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

# mutmut's exit codes for a mutant (mutmut.stats.status_by_exit_code).
KILLED = {1, 3, 24, -24, 36, 152, 255}


def load(root: Path) -> dict[str, dict[str, int | None]]:
    """Module path (``src/paycore/domain/money.py``) -> {mutant name: exit code}."""
    found: dict[str, dict[str, int | None]] = {}
    for meta in sorted(root.glob("**/*.py.meta")):
        codes = json.loads(meta.read_text("utf-8")).get("exit_code_by_key", {})
        if codes:
            found[str(meta.relative_to(root))[: -len(".meta")]] = codes
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutants", type=Path, default=Path("mutants"))
    parser.add_argument("--min", type=float, default=0.0, help="fail below this overall %%")
    args = parser.parse_args(argv)
    modules = load(args.mutants)
    if not modules:
        print(f"no mutation results under {args.mutants}/: run `mutmut run` first")
        return 1
    total = killed = 0
    survivors: list[str] = []
    print(f"{'module':<32} {'killed':>7} {'total':>6} {'score':>7}")
    for path, codes in modules.items():
        dead = sum(1 for code in codes.values() if code in KILLED)
        unchecked = [name for name, code in codes.items() if code is None]
        survivors += [name for name, code in codes.items() if code not in KILLED]
        total += len(codes)
        killed += dead
        note = f"  ({len(unchecked)} not run yet)" if unchecked else ""
        print(f"{path:<32} {dead:>7} {len(codes):>6} {100 * dead / len(codes):>6.1f}%{note}")
    score = 100 * killed / total
    print(f"{'overall':<32} {killed:>7} {total:>6} {score:>6.1f}%")
    if survivors:
        print(f"\nsurviving ({len(survivors)}; `mutmut show NAME` for the diff):")
        for name in survivors:
            print(f"  {name}")
    return 1 if score < args.min else 0


if __name__ == "__main__":
    sys.exit(main())

"""``python3 -m hybridasr.jobs <run.pl|slurm.pl|queue.pl> [args...]`` (what ``utils/run.pl``
execs)."""
from __future__ import annotations

import sys
from typing import List, Optional

from hybridasr.jobs.cluster import CLUSTERS, main_cluster
from hybridasr.jobs.runner import main_local


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    prog = argv[0] if argv else ""
    if prog == "run.pl":
        return main_local(argv[1:], prog=prog)
    if prog in CLUSTERS:
        return main_cluster(CLUSTERS[prog](), argv[1:])
    print(f"hybridasr.jobs: the first argument names the runner: run.pl, "
          f"{', '.join(sorted(CLUSTERS))}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())

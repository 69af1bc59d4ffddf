"""scripts/torture: what a write acknowledged by the server survives.

Each scenario runs on goblin-server and on Debian's redis-server, with the
same seed and the same faults, and reports per server: rounds, writes
acknowledged, and acknowledged writes missing afterwards. A scenario fails
when Goblin loses a write that its configuration promises to keep (the
`promised` column); Redis's figures are shown beside it, never asserted.

Scenarios (each a module of this directory):
- disk:     full disks (tmpfs) and failing disks (a FUSE layer, faultfs.py:
            EIO on write, fsync and rename; power loss, which drops what was
            not fsynced), under appendfsync always and everysec;
- crash:    kill -9 at random moments while a load runs and BGREWRITEAOF,
            BGSAVE and manifest switches happen (--rounds N);
- failover: a primary, two replicas and three Sentinels; every write that
            WAIT confirmed must be on the promoted replica (--failover).
"""

import argparse
import os
import sys
import time
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@dataclass
class Result:
    """One scenario on one server."""
    scenario: str
    server: str  # "goblin" or "redis"
    rounds: int = 0
    acked: int = 0
    lost: int = 0
    # Goblin promises to lose nothing here (the scenario fails if it does).
    promised: bool = True
    # At most this many may be lost where the promise is bounded (everysec
    # on power loss: about one second of writes).
    allowed: int = 0
    notes: list = field(default_factory=list)

    def failed(self):
        return self.server == "goblin" and self.lost > self.allowed and self.promised


def parse_args(argv):
    p = argparse.ArgumentParser(prog="scripts/torture", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=None, help="seed of every random choice (default: from the clock)")
    p.add_argument("--rounds", type=int, default=None,
                   help="kill -9 rounds of the crash scenario (default 8; the issue's long run is 50 or more)")
    p.add_argument("--failover", action="store_true", help="run the Sentinel failover scenario only")
    p.add_argument("--failover-rounds", type=int, default=20, help="failover rounds (default 20)")
    p.add_argument("--only", default=None,
                   help="comma-separated scenarios to run: disk, crash, failover (default: all three, "
                        "the failover one with 2 rounds a server)")
    p.add_argument("--servers", default="goblin,redis", help="which servers (default goblin,redis)")
    p.add_argument("--keep", action="store_true", help="keep the data directories of failed rounds")
    p.add_argument("--verbose", "-v", action="store_true")
    p.add_argument("--disk-long", action="store_true",
                   help="disk scenarios: more room to fill, more writes, longer fault windows")
    p.add_argument("--disk-filter", default=None, help="disk scenarios: only those whose name contains this")
    p.add_argument("--disk-metadata", choices=("strict", "ordered"), default="strict",
                   help="faultfs's model of directory entries on power loss (see faultfs.py; default strict)")
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    if args.seed is None:
        args.seed = int(time.time()) % 1_000_000_007
    args.servers = [s.strip() for s in args.servers.split(",") if s.strip()]
    if args.failover:
        scenarios = ["failover"]
    elif args.only:
        scenarios = [s.strip() for s in args.only.split(",")]
    else:
        scenarios = ["disk", "crash", "failover"]
    print(f"torture: seed {args.seed}, scenarios {', '.join(scenarios)}, servers {', '.join(args.servers)}",
          flush=True)
    results = []
    started = time.monotonic()
    for name in scenarios:
        module = __import__(name)
        t0 = time.monotonic()
        results.extend(module.run(args))
        print(f"torture: {name} took {time.monotonic() - t0:.0f} s", flush=True)
    print()
    print(f"{'scenario':<44} {'server':<7} {'rounds':>6} {'acked':>8} {'lost':>6}  verdict")
    failed = False
    for r in results:
        if r.server == "goblin":
            verdict = "FAILED" if r.failed() else ("ok" if r.promised else "no promise")
        else:
            verdict = "(reference)"
        failed |= r.failed()
        print(f"{r.scenario:<44} {r.server:<7} {r.rounds:>6} {r.acked:>8} {r.lost:>6}  {verdict}")
        for n in r.notes:
            print(f"    {n}")
    print(f"\ntorture: {'FAILED' if failed else 'passed'} in {time.monotonic() - started:.0f} s (seed {args.seed})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""One worker of the concurrency stress test: random snapshot/restore/list on a shared desk.

Run as ``python tests/helpers/scripts/stress_driver.py REPO DESK WORKER OPS SEED LOG``; it
appends one JSON line per operation to LOG (what it did, the ids it got, or the error) and
never stops on an error.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path


def main() -> None:
    repo, desk = Path(sys.argv[1]), Path(sys.argv[2])
    worker, ops, seed, log = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
    from trading_checkpoints import Checkpoints

    rng = random.Random(seed)
    seen: list[str] = []
    with open(log, 'a') as out:
        for i in range(ops):
            op = rng.choices(['snapshot', 'restore', 'list'], weights=[5, 3, 2])[0]
            record: dict = {'worker': worker, 'i': i, 'op': op}
            started = time.perf_counter()
            try:
                cps = Checkpoints(repo, desk)
                if op == 'snapshot':
                    (desk / 'notes' / f'p{worker}.md').write_text(f'worker {worker} op {i}\n')
                    if rng.random() < 0.3:
                        (desk / 'memory' / f'w{worker}.md').write_text('x' * rng.randint(0, 9000))
                    record['id'] = cps.snapshot(f'worker {worker} op {i}')
                    if record['id']:
                        seen.append(record['id'])
                elif op == 'restore' and seen:
                    result = cps.restore_with_result(rng.choice(seen))
                    record.update(before=result.before_id, restored=result.restored_id)
                    seen.append(result.before_id)
                else:
                    record['op'] = 'list'
                    listed = [c.checkpoint_id for c in cps.list(limit=30)]
                    record['listed'] = listed
                    seen.extend(listed[:5])
            except Exception as error:  # noqa: BLE001 - every error is reported, none expected
                record['error'] = f'{type(error).__name__}: {error}'
            record['seconds'] = round(time.perf_counter() - started, 4)
            out.write(json.dumps(record) + '\n')
            out.flush()


if __name__ == '__main__':
    main()

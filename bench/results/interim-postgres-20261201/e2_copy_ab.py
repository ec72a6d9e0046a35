"""E2 A/B in one process: enqueue_many of N noop jobs, INSERT...unnest vs COPY, alternated."""
import gc, statistics, time
from bench.postgres_cluster import PostgresCluster
import conveyor
from conveyor.backends.postgres import inserts

c = PostgresCluster().init().start()
res = {}
try:
    for rep in range(3):
        for n in (10_000, 100_000):
            for mode in (("insert", "copy") if rep % 2 == 0 else ("copy", "insert")):
                inserts.COPY_MIN = 10**9 if mode == "insert" else 200
                app = conveyor.App(c.fresh_database("e2ab"))
                @app.task
                def job(i: int, t0: float, kind: str) -> int: return i
                _ = app.backend
                items = [(i, 0.0, "noop") for i in range(n)]
                gc.collect(); gc.disable()
                t = time.perf_counter(); job.enqueue_many(items); dt = time.perf_counter() - t
                gc.enable()
                res.setdefault((n, mode), []).append(n / dt)
                app.close()
    for (n, mode), v in sorted(res.items()):
        print(f"E2 n={n:>7,} {mode:6} median {statistics.median(v):>9,.0f} jobs/s  (min {min(v):,.0f}, max {max(v):,.0f})")
finally:
    c.stop("immediate"); c.remove()

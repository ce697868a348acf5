#!/usr/bin/python3
"""bench/compare: collie against Open MPI, MPICH and Gloo on this host, in one go.

    make bench                       # full sweep, about 15 minutes on 2 cores
    BENCH_QUICK=1 make bench         # a subset in about 3 minutes
    /usr/bin/python3 bench/compare/run.py [--build build] [--quick]

Builds bench/compare/mpi_coll_bench.c twice (mpicc.openmpi, mpicc.mpich) and
bench/compare/gloo_bench.cc (g++, Debian's libgloo-dev) into BUILD/bench, probes memcpy
and a loopback TCP stream, then for every (collective, rank count) runs collie's perf
binary and each other implementation in turn, R times, rotating the order each round, and
keeps the best figure per size. Writes bench/results/latest.md and one PNG per collective;
raw logs and every measurement go to BUILD/bench/.

Environment knobs (all optional): BENCH_QUICK=1, BENCH_REPEATS (R), BENCH_BUDGET (seconds
of MPI/Gloo work per size before the counts are capped), BENCH_ITERS / BENCH_WARMUP (-n/-w,
default 20/5 as in collie's perf suite), BENCH_SMALL_ITERS / BENCH_SMALL_WARMUP / BENCH_SMALL_MAX
(-n/-w for sizes up to that many bytes, in a run of their own; default 1000/100 up to 4096),
BENCH_ONLY (comma list of collectives),
BENCH_RESULTS (output directory instead of bench/results), BENCH_SETTLE (seconds a round
waits at most for the VM's slow state to pass, default 90; 0: no wait).
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, "bench", "compare")

# bench/exchange_probe: the exchange between two CPUs at most this many times the same
# copies on one CPU: copies between the CPUs run at their usual speed (about 1 on the AMD VM,
# 1.5 on the Intel VM, 9 in the AMD VM's slow state; the absolute figures differ by machine).
SETTLED_RATIO = 3
COLLS = ["allreduce", "allgather", "reduce_scatter", "broadcast", "alltoall"]
COLLIE_BIN = {"allreduce": "all_reduce_perf", "allgather": "all_gather_perf",
              "reduce_scatter": "reduce_scatter_perf", "broadcast": "broadcast_perf",
              "alltoall": "alltoall_perf"}
BUS = {"allreduce": "2(n-1)/n", "allgather": "(n-1)/n", "reduce_scatter": "(n-1)/n",
       "broadcast": "1", "alltoall": "(n-1)/n"}
TITLE = {"allreduce": "all-reduce (float32 sum)", "allgather": "all-gather",
         "reduce_scatter": "reduce-scatter (float32 sum; MPI_Reduce_scatter_block)",
         "broadcast": "broadcast (root 0)", "alltoall": "all-to-all"}
LABEL = {"collie": "collie", "collie-tcp": "collie tcp", "collie-reg": "collie, collie_mem_alloc",
         "ompi": "Open MPI", "mpich": "MPICH",
         "gloo-ring": "Gloo ring", "gloo-hd": "Gloo halving-doubling"}
OTHERS = ["ompi", "mpich", "gloo-ring", "gloo-hd"]  # what "best other" is taken over
RUN_TIMEOUT = 300  # seconds for any single run; a run that exceeds it is recorded as failed


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def fmt_size(b):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= div and b % div == 0:
            return f"{b // div} {unit}iB"
    return f"{b} B"


def fmt_bw(v):
    if v is None:
        return "–"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 0.01:
        return f"{v:.2f}"
    return f"{v:.2g}"


def fmt_us(v):
    if v is None:
        return "–"
    # below 10 us two decimals: the 2-rank rows differ by hundredths (and sit near the
    # line probe's floor)
    return f"{v:.2f}" if v < 10 else f"{v:.1f}" if v < 1000 else f"{v:,.0f}"


class Runner:
    def __init__(self, args):
        self.build = os.path.abspath(os.path.join(ROOT, args.build))
        self.out = os.path.join(self.build, "bench")
        self.logs = os.path.join(self.out, "logs")
        self.results_dir = os.path.abspath(os.environ.get("BENCH_RESULTS") or os.path.join(ROOT, "bench", "results"))
        self.quick = args.quick or os.environ.get("BENCH_QUICK", "0") not in ("", "0")
        env_int = lambda k, d: int(os.environ.get(k) or d)
        if self.quick:
            self.minb, self.maxb, self.factor = 16, 64 << 20, 4
            self.repeats = env_int("BENCH_REPEATS", 1)
            self.budget = float(os.environ.get("BENCH_BUDGET") or 0.5)
            self.iperf_secs = 2
        else:
            self.minb, self.maxb, self.factor = 8, 64 << 20, 2
            self.repeats = env_int("BENCH_REPEATS", 2)
            self.budget = float(os.environ.get("BENCH_BUDGET") or 1.0)
            self.iperf_secs = 4
        # -n/-w as collie's perf suite defaults them; the quick subset halves them (for everyone).
        self.iters = env_int("BENCH_ITERS", 10 if self.quick else 20)
        self.warmup = env_int("BENCH_WARMUP", 2 if self.quick else 5)
        # Sizes up to small_max run more operations (for everyone): 20 operations of 0.2 us
        # are one clock reading of 4 us, and the best of 3 such rounds moved by a quarter
        # from run to run at 8 B; 1,000 give a latency that a rerun repeats.
        self.small_max = env_int("BENCH_SMALL_MAX", 4096)
        self.small_iters = env_int("BENCH_SMALL_ITERS", 200 if self.quick else 1000)
        self.small_warmup = env_int("BENCH_SMALL_WARMUP", 20 if self.quick else 100)
        only = os.environ.get("BENCH_ONLY")
        self.colls = [c for c in COLLS if not only or c in only.split(",")]
        self.ranks = {"allreduce": [2, 4, 8]}
        for c in COLLS[1:]:
            self.ranks[c] = [2, 4]
        self.notes = []     # things the reader must know (failures, missing pieces)
        self.settle_s = float(os.environ.get("BENCH_SETTLE", "90"))
        self.unsettled = []  # rounds that started with the VM in its slow state
        self.settle_waits = 0.0
        self.results = {}   # (coll, n, impl) -> {size: best row}
        self.capped = {}    # (coll, n, impl) -> set of sizes where a run was capped
        self.failed = {}    # (coll, n, impl) -> message
        self.have_gloo = False
        self.run_count = 0

    # ---------------------------------------------------------------- helpers
    def sh(self, cmd, logfile, env=None, timeout=RUN_TIMEOUT):
        """Runs cmd (a list) in its own session, stdout+stderr to logfile. Returns (rc, stdout)."""
        full_env = dict(os.environ)
        full_env.update(env or {})
        with open(logfile, "w") as lf:
            lf.write("$ " + " ".join(cmd) + "\n")
            lf.flush()
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=lf, env=full_env, cwd=self.out,
                                 start_new_session=True, text=True)
            try:
                out, _ = p.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill_group(p)
                out = (p.communicate()[0] or "")
                lf.write(out)
                lf.write(f"\n[bench] killed after {timeout} s\n")
                return 124, out
            lf.write(out)
        return p.returncode, out

    @staticmethod
    def kill_group(p):
        # The run's own process group only (it was started in a new session).
        for sig, wait in ((signal.SIGTERM, 3), (signal.SIGKILL, 5)):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                return
            try:
                p.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                pass

    # ---------------------------------------------------------------- build
    def build_all(self):
        os.makedirs(self.logs, exist_ok=True)
        for coll in self.colls:
            b = os.path.join(self.build, "bin", COLLIE_BIN[coll])
            if not os.access(b, os.X_OK):
                sys.exit(f"bench: {b} is missing; run `make` first (make bench does)")
        src = os.path.join(SRC, "mpi_coll_bench.c")
        for mpi, cc in (("openmpi", "mpicc.openmpi"), ("mpich", "mpicc.mpich")):
            exe = os.path.join(self.out, f"mpi_coll_bench.{mpi}")
            cmd = [cc, "-O2", "-std=c11", "-Wall", "-Wextra", src, "-o", exe]
            log(" ".join(cmd[:1] + cmd[-3:]))
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode:
                sys.exit(f"bench: {cc} failed:\n{r.stderr}")
        gsrc = os.path.join(SRC, "gloo_bench.cc")
        gexe = os.path.join(self.out, "gloo_bench")
        if not os.path.exists("/usr/include/gloo/allreduce.h"):
            self.notes.append("Gloo columns left out: libgloo-dev is not installed (scripts/install-deps.sh installs it).")
            return
        cmd = ["g++", "-O2", "-std=c++17", "-Wall", "-Wextra", gsrc, "-o", gexe, "-lgloo", "-lpthread"]
        log(" ".join(cmd[:1] + [gsrc, "-o", gexe]))
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            self.notes.append("Gloo columns left out: gloo_bench.cc did not build against libgloo-dev "
                              f"(see {os.path.relpath(self.logs, ROOT)}/gloo-build.log).")
            with open(os.path.join(self.logs, "gloo-build.log"), "w") as f:
                f.write(r.stderr)
            return
        self.have_gloo = True

    # ---------------------------------------------------------------- probes
    def run_probe(self, name, args, what):
        """Runs build/bin/<name> with args; its output, or None (noted) when it was not built."""
        exe = os.path.join(self.build, "bin", name)
        if not os.access(exe, os.X_OK):
            self.notes.append(f"{what} missing (build/bin/{name})")
            return None
        rc, out = self.sh([exe] + args, os.path.join(self.logs, name + ".log"))
        return out

    def probe_memcpy(self):
        out = self.run_probe("memcpy_probe", [str(4 << 20), str(64 << 20), str(256 << 20)], "memcpy probe")
        return {int(m.group(1)): float(m.group(2))
                for m in re.finditer(r"memcpy\s+(\d+) bytes:\s+([\d.]+) GB/s", out or "")}

    def probe_cma(self):
        """process_vm_readv against memcpy, 64 MiB (bench/cma_probe.c)."""
        out = self.run_probe("cma_probe", ["64"], "CMA probe")
        if out is None:
            return None
        m = re.search(r"process_vm_readv\s+\d+ bytes:\s+([\d.]+) GB/s", out)
        c = re.search(r"memcpy\s+\d+ bytes:\s+([\d.]+) GB/s", out)
        if not m:
            return "not available" if "not available" in out else None
        return f"{float(m.group(1)):.2f} GB/s" + (f" (memcpy in-process: {float(c.group(1)):.2f} GB/s)" if c else "")

    def probe_tcp_two_way(self):
        """One 127.0.0.1 connection, one way and both ways at once (bench/tcp_probe.c)."""
        out = self.run_probe("tcp_probe", ["256"], "TCP two-way probe") or ""
        one = re.search(r"tcp one way:\s+([\d.]+) GB/s", out)
        two = re.search(r"tcp both ways:\s+([\d.]+) GB/s", out)
        return (float(one.group(1)), float(two.group(1))) if one and two else None

    def probe_exchange(self):
        """The least a 2-rank 1 MiB all-to-all through staging costs, and the same copies on
        one CPU (bench/exchange_probe.c): (exchange us, local us), or None."""
        out = self.run_probe("exchange_probe", ["512"], "exchange probe") or ""
        times = [float(t) for t in re.findall(r"best ([\d.]+) us per exchange", out)]
        local = re.search(r"on one CPU: best ([\d.]+) us", out)
        return (min(times), float(local.group(1))) if times and local else None

    def probe_copy_pair(self):
        """Two CPUs copying 64 MiB each at once: the single-copy floor (bench/copy_pair_probe.c)."""
        out = self.run_probe("copy_pair_probe", ["64"], "copy pair probe") or ""
        got = {m.group(1): (float(m.group(2)), float(m.group(3))) for m in re.finditer(
            r"at once, (memcpy|streaming stores): best ([\d.]+) ms; .* at most ([\d.]+) GB/s busbw", out)}
        return got if len(got) == 2 else None

    def probe_yield(self):
        """A sched_yield handoff between two processes on one CPU (bench/yield_probe.c)."""
        out = self.run_probe("yield_probe", [], "yield probe") or ""
        m = re.search(r"one CPU:\s+([\d.]+) us", out)
        return float(m.group(1)) if m else None

    def probe_line(self):
        """One cache-line exchange each way between two processes: the floor of a 2-rank
        small all-reduce on shared memory (bench/line_probe.c)."""
        out = self.run_probe("line_probe", [], "line probe") or ""
        m = re.search(r"reads the other's\): best ([\d.]+) us", out)
        return float(m.group(1)) if m else None

    @staticmethod
    def free_port():
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))  # ephemeral: the kernel picks, nothing fixed
            return s.getsockname()[1]

    def probe_socket(self):
        if not shutil.which("iperf3"):
            self.notes.append("socket probe skipped: iperf3 is not installed")
            return None
        for attempt in range(3):
            port = self.free_port()
            slog = open(os.path.join(self.logs, f"iperf3-server-{attempt}.log"), "w")
            server = subprocess.Popen(["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", str(port)],
                                      stdout=slog, stderr=subprocess.STDOUT, start_new_session=True)
            time.sleep(0.5)
            rc, out = self.sh(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", str(self.iperf_secs), "-J"],
                              os.path.join(self.logs, f"iperf3-client-{attempt}.log"), timeout=self.iperf_secs + 30)
            try:
                server.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.kill_group(server)
            slog.close()
            if rc == 0:
                try:
                    j = json.loads(out)
                    return j["end"]["sum_received"]["bits_per_second"] / 8e9
                except (ValueError, KeyError):
                    pass
        self.notes.append("socket probe failed three times (see build/bench/logs/iperf3-*.log)")
        return None

    # ---------------------------------------------------------------- runs
    def parts(self):
        """(first size, last size, -n, -w) of each invocation: the small sizes with more
        operations, then the rest."""
        if self.small_iters <= self.iters or self.small_max < self.minb:
            return [(self.minb, self.maxb, self.iters, self.warmup)]
        last_small = self.minb
        while last_small * self.factor <= min(self.small_max, self.maxb):
            last_small *= self.factor
        l = [(self.minb, last_small, self.small_iters, self.small_warmup)]
        if last_small < self.maxb:
            l.append((last_small * self.factor, self.maxb, self.iters, self.warmup))
        return l

    def run_one(self, coll, n, impl, rep):
        rows, rc = [], 0
        for k, (b, e, iters, warmup) in enumerate(self.parts()):
            r, got = self.run_part(coll, n, impl, rep, k, ["-b", str(b), "-e", str(e), "-f", str(self.factor)],
                                   ["-n", str(iters), "-w", str(warmup)], iters)
            rc = rc or r
            rows += got
        self.run_count += 1
        if rc != 0 or not rows:
            msg = f"exit status {rc}" + (" (timed out)" if rc == 124 else "") + \
                  f", see {os.path.relpath(os.path.join(self.logs, f'{coll}-{n}-{impl}-r{rep}'), ROOT)}*.log"
            self.failed.setdefault((coll, n, impl), msg)
            log(f"  {impl:10s} FAILED ({msg})")
        with open(os.path.join(self.out, "all-runs.jsonl"), "a") as f:
            for r in rows:
                f.write(json.dumps(dict(r, impl=impl, collective=coll, nranks=n, rep=rep)) + "\n")
        key = (coll, n, impl)
        best = self.results.setdefault(key, {})
        for r in rows:
            if r["size"] <= 0:
                continue
            if r.get("capped"):
                self.capped.setdefault(key, set()).add(r["size"])
            cur = best.get(r["size"])
            if cur is None or r["busbw"] > cur["busbw"] or (r["busbw"] == cur["busbw"] and r["time_us"] < cur["time_us"]):
                best[r["size"]] = r
        return rows

    def impls(self, coll, n):
        l = ["collie", "collie-reg", "ompi", "mpich"]
        if coll == "allreduce" and self.have_gloo:
            l += ["gloo-ring", "gloo-hd"]
        if coll == "allreduce" and n == 2:
            l.append("collie-tcp")
        return l

    def run_part(self, coll, n, impl, rep, part, size_args, timing, iters):
        """One invocation of one implementation over some sizes: (exit status, rows)."""
        tag = f"{coll}-{n}-{impl}-r{rep}" + (f"-p{part}" if part else "")
        logfile = os.path.join(self.logs, tag + ".log")
        rows = []
        if impl in ("collie", "collie-tcp", "collie-reg"):
            jfile = os.path.join(self.logs, tag + ".json")
            if os.path.exists(jfile):
                os.unlink(jfile)
            cmd = [os.path.join(self.build, "bin", COLLIE_BIN[coll]), "-p", str(n)] + size_args + timing + \
                  ["-c", "0", "-J", jfile] + (["-R", "1"] if impl == "collie-reg" else [])
            env = {"COLLIE_TRANSPORT": "tcp"} if impl == "collie-tcp" else {}
            rc, out = self.sh(cmd, logfile, env)
            # MPI_Bcast is in place by definition; collie's in-place row is the same operation.
            which = "in_place" if coll == "broadcast" else "out_of_place"
            if rc == 0 and os.path.exists(jfile):
                with open(jfile) as f:
                    j = json.load(f)
                for r in j["results"]:
                    m = r[which]
                    rows.append({"size": r["size"], "time_us": m["time_us"], "busbw": m["busbw"],
                                 "algbw": m["algbw"], "capped": False, "iters": j["options"]["iters"]})
            else:
                # The JSON file is written at the end; keep the rows a failed run did print
                # (size count type redop root | time algbw busbw #wrong | same in place).
                for line in out.splitlines():
                    f = line.split()
                    if len(f) == 13 and f[0].isdigit():
                        try:
                            k = 9 if which == "in_place" else 5
                            rows.append({"size": int(f[0]), "time_us": float(f[k]), "algbw": float(f[k + 1]),
                                         "busbw": float(f[k + 2]), "capped": False, "iters": iters})
                        except ValueError:
                            pass
        else:
            mpi_args = ["-c", coll] + size_args + timing + ["-B", str(self.budget), "-l", impl]
            if impl == "ompi":
                cmd = ["mpirun.openmpi", "--oversubscribe", "-n", str(n),
                       os.path.join(self.out, "mpi_coll_bench.openmpi")] + mpi_args
                env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
            elif impl == "mpich":
                cmd = ["mpiexec.mpich", "-n", str(n), os.path.join(self.out, "mpi_coll_bench.mpich")] + mpi_args
                env = {}
            else:
                cmd = [os.path.join(self.out, "gloo_bench"), "-p", str(n), "-a", impl.split("-")[1]] + \
                      size_args + timing + ["-B", str(self.budget), "-l", impl]
                env = {}
            rc, out = self.sh(cmd, logfile, env)
            for line in out.splitlines():
                if line.startswith("{"):
                    try:
                        rows.append(json.loads(line))
                    except ValueError:
                        pass
            bad = [r for r in rows if r.get("wrong", 0) > 0]
            if bad:
                rc = rc or 1
                self.failed[(coll, n, impl)] = f"wrong results at {len(bad)} sizes (bench bug?), see {os.path.relpath(logfile, ROOT)}"
        return rc, rows

    def settle(self, what):
        """Waits (up to BENCH_SETTLE seconds) until copies between the two CPUs run at their
        usual speed again: the VM drifts into states where they are several times slower,
        and it drifted there right after minutes of oversubscribed busy-polling (MPICH, 4
        ranks). On the AMD VM bench/exchange_probe reads about 33 us normally, 60 to 75 in a
        milder state, 270 and more in the slow one, against 33 for the same copies on one
        CPU; the wait compares the two (SETTLED_RATIO), since both differ by machine. Every
        implementation of a round runs after the same wait; the blocks that did not settle
        are listed in the notes."""
        if self.settle_s <= 0:
            return
        t0 = time.time()
        while True:
            got = self.probe_exchange()
            best = got[0] if got else None
            if got is None or got[0] < SETTLED_RATIO * got[1]:
                break
            if time.time() - t0 > self.settle_s:
                self.unsettled.append(f"{what} ({got[0]:.0f} us against {got[1]:.0f} on one CPU)")
                break
            time.sleep(5)
        waited = time.time() - t0
        self.settle_waits += waited
        if best is not None and waited > 10:
            log(f"  settled after {waited:.0f} s: exchange probe {best:.0f} us")

    def run_all(self):
        t0 = time.time()
        configs = [(c, n) for c in self.colls for n in self.ranks[c]]
        for i, (coll, n) in enumerate(configs):
            impls = self.impls(coll, n)
            for rep in range(self.repeats):
                self.settle(f"{coll} on {n} ranks, round {rep + 1}")
                order = impls[rep % len(impls):] + impls[:rep % len(impls)]  # rotate each round
                for impl in order:
                    ts = time.time()
                    rows = self.run_one(coll, n, impl, rep)
                    log(f"[{i + 1}/{len(configs)}] {coll} n={n} round {rep + 1}/{self.repeats} {impl:10s} "
                        f"{len(rows)} sizes in {time.time() - ts:.1f} s")
        self.elapsed = time.time() - t0

    # ---------------------------------------------------------------- report
    def machine_facts(self):
        facts = {"nproc": os.cpu_count()}
        try:
            with open("/proc/cpuinfo") as f:
                m = re.search(r"model name\s*:\s*(.*)", f.read())
                facts["cpu"] = m.group(1).strip() if m else "?"
        except OSError:
            facts["cpu"] = "?"
        try:
            with open("/proc/meminfo") as f:
                kb = int(re.search(r"MemTotal:\s*(\d+)", f.read()).group(1))
                facts["mem"] = f"{kb / 1024 / 1024:.0f} GiB"
        except (OSError, AttributeError):
            facts["mem"] = "?"
        facts["kernel"] = platform.release()
        return facts

    @staticmethod
    def version_of(cmd, pattern):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout
            m = re.search(pattern, out)
            return m.group(1) if m else "?"
        except (OSError, subprocess.TimeoutExpired):
            return "?"

    def write_report(self, facts, mem, sock, load0, load1, started):
        os.makedirs(self.results_dir, exist_ok=True)
        ompi_v = self.version_of(["mpirun.openmpi", "--version"], r"(\d+\.\d+\.\d+)")
        mpich_v = self.version_of(["mpiexec.mpich", "--version"], r"Version:\s*(\S+)")
        gloo_v = self.version_of(["dpkg-query", "-W", "-f=${Version}", "libgloo-dev"], r"(\S+)")
        collie_v = self.version_of([os.path.join(self.build, "bin", "collie-info"), "--version"], r"collie (\S+)")
        commit = self.version_of(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], r"(\w+)")
        # bench/results is left out: this run has rewritten its plots already.
        dirty = self.version_of(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no", "--", ".",
                                 ":(exclude)bench/results"], r"(\S)")
        commit += "" if dirty == "?" else " (with uncommitted changes)"

        L = []
        L.append("# collie against Open MPI, MPICH and Gloo, on one host")
        L.append("")
        L.append(f"Written by `make bench` ({'BENCH_QUICK=1, a subset' if self.quick else 'full sweep'}) "
                 f"on {started:%Y-%m-%d %H:%M} UTC (the measurements took {self.elapsed / 60:.1f} min); collie {collie_v}, "
                 f"commit {commit}. "
                 "How to read it and rerun it: [bench/README.md](../README.md).")
        L.append("")
        L.append("## Machine")
        L.append("")
        L.append("| fact | value |")
        L.append("|---|---|")
        L.append(f"| CPUs (nproc) | {facts['nproc']} |")
        L.append(f"| CPU model | {facts['cpu']} |")
        L.append(f"| memory | {facts['mem']} |")
        L.append(f"| kernel | {facts['kernel']} |")
        L.append(f"| load average (1 min) at start / end | {load0:.2f} / {load1:.2f} |")
        if mem:
            L.append("| memcpy, one thread (bench/memcpy_probe.c) | " +
                     ", ".join(f"{fmt_size(k)}: {v:.2f} GB/s" for k, v in sorted(mem.items())) + " |")
        if getattr(self, "cma", None):
            L.append(f"| process_vm_readv from another process, 64 MiB (bench/cma_probe.c) | {self.cma} |")
        if getattr(self, "exchange", None):
            L.append("| 2-rank 1 MiB all-to-all through staging, the three copies alone, two threads "
                     f"(bench/exchange_probe.c); the same copies on one CPU | {self.exchange[0]:.1f} us; "
                     f"{self.exchange[1]:.1f} us |")
        if getattr(self, "copy_pair", None):
            mc, st = self.copy_pair["memcpy"], self.copy_pair["streaming stores"]
            L.append("| two CPUs copying 64 MiB each at once (bench/copy_pair_probe.c): memcpy / streaming stores; "
                     "the busbw ceiling of a 2-rank 64 MiB all-gather or all-to-all that copies each byte once | "
                     f"{mc[0]:.2f} ms / {st[0]:.2f} ms; {max(mc[1], st[1]):.2f} GB/s |")
        if getattr(self, "yield_us", None):
            L.append(f"| sched_yield handoff between two processes on one CPU (bench/yield_probe.c) | {self.yield_us:.2f} us |")
        if getattr(self, "line_us", None):
            L.append("| a cache line each way between two processes on two CPUs, each publishing then reading the "
                     f"other's: the floor of a 2-rank 8 B all-reduce (bench/line_probe.c) | {self.line_us:.3f} us |")
        if getattr(self, "tcp2", None):
            L.append(f"| TCP over loopback, 4 MiB writes (bench/tcp_probe.c): one way / both ways at once | "
                     f"{self.tcp2[0]:.2f} GB/s / {self.tcp2[1]:.2f} GB/s per direction |")
        L.append(f"| TCP over loopback, one stream (iperf3, {self.iperf_secs} s) | " +
                 (f"{sock:.2f} GB/s" if sock else "not measured") + " |")
        L.append("")
        L.append("## What ran")
        L.append("")
        L.append(f"- **collie** {collie_v}: `build/bin/*_perf -p N -c 0` (shared memory, malloc buffers); "
                 "**collie, collie_mem_alloc**: the same with `-R 1` (buffers from `collie_mem_alloc`, which the "
                 "other ranks read directly); **collie tcp**: `COLLIE_TRANSPORT=tcp` (2-rank all-reduce only).")
        L.append(f"- **Open MPI** {ompi_v} (`mpirun.openmpi --oversubscribe`) and **MPICH** {mpich_v} "
                 "(`mpiexec.mpich`), default settings, running bench/compare/mpi_coll_bench.c.")
        if self.have_gloo:
            L.append(f"- **Gloo** (Debian libgloo-dev {gloo_v}), TCP transport on 127.0.0.1, rendezvous through a "
                     "FileStore in a temporary directory: `gloo::allreduce` with the RING algorithm (out of place) and "
                     "`AllreduceHalvingDoubling` (in place only); all-reduce only.")
        L.append(f"- Sizes {fmt_size(self.minb)} to {fmt_size(self.maxb)}, factor {self.factor}; float32; "
                 f"per size {self.warmup} warm-up operations, two barriers, {self.iters} timed operations"
                 + (f" ({self.small_warmup} and {self.small_iters} up to {fmt_size(self.parts()[0][1])}, in a run of "
                    "their own: a few operations of a microsecond are one clock reading)" if len(self.parts()) > 1 else "")
                 + "; time per operation averaged over ranks (collie's `-a 1`).")
        L.append(f"- {self.repeats} round(s) per (collective, ranks), implementations alternating, order rotated each "
                 "round; the table keeps each implementation's best round per size.")
        L.append("- busbw as nccl-tests defines it (docs/perf.md): algbw × 2(n-1)/n for all-reduce, × (n-1)/n for "
                 "all-gather, reduce-scatter and all-to-all, × 1 for broadcast. Out-of-place rows, except broadcast, "
                 "where collie's in-place row is used (MPI_Bcast is in place).")
        L.append(f"- MPI and Gloo runs have a time budget of {self.budget:g} s per size: when the warm-up shows that "
                 f"{self.warmup} + {self.iters} operations would take longer, they run fewer (at least 2 timed, marked "
                 "`*`). This is for MPICH, which busy-polls and collapses when ranks outnumber cores "
                 "(milliseconds per small operation). collie always runs the full counts.")
        L.append("- Ratio = collie busbw / the best busbw among the other implementations at that size "
                 "(> 1: collie is faster). The ranks share the machine's cores: 4 and 8 ranks are oversubscribed.")
        L.append("")

        # Summary
        L.append("## Summary")
        L.append("")
        for impl, intro in (("collie", None),
                            ("collie-reg", "With send and receive buffers from `collie_mem_alloc` (perf `-R 1`: the "
                                           "shared-memory collectives copy once; the other implementations as above):")):
            name = "collie" if impl == "collie" else "collie_mem_alloc"
            if intro:
                L.append(intro)
                L.append("")
            L.append(f"| collective | ranks | {name} / best other: at 1 MiB | at the largest size | median over sizes "
                     f"| min | max | {name} busbw peak (GB/s) |")
            L.append("|---|---|---|---|---|---|---|---|")
            for coll in self.colls:
                for n in self.ranks[coll]:
                    ratios, peak = self.ratios(coll, n, impl)
                    if not ratios:
                        L.append(f"| {coll} | {n} | – | – | – | – | – | – |")
                        continue
                    vals = sorted(r for _, r, _ in ratios)
                    med = vals[len(vals) // 2] if len(vals) % 2 else 0.5 * (vals[len(vals) // 2 - 1] + vals[len(vals) // 2])
                    mib = [r for r in ratios if r[0] == 1 << 20]
                    mib_txt = f"{mib[0][1]:.2f} vs {LABEL[mib[0][2]]}" if mib else "–"
                    big = ratios[-1]
                    L.append(f"| {coll} | {n} | {mib_txt} | {big[1]:.2f} vs {LABEL[big[2]]} ({fmt_size(big[0])}) | "
                             f"{med:.2f} | {vals[0]:.2f} | {vals[-1]:.2f} | {fmt_bw(peak[1])} at {fmt_size(peak[0])} |")
            L.append("")

        # Latency
        L.append("## Latency at the smallest size (µs per operation)")
        L.append("")
        all_impls = ["collie", "collie-reg", "ompi", "mpich", "gloo-ring", "gloo-hd", "collie-tcp"]
        shown = [i for i in all_impls if any(k[2] == i for k in self.results)]
        L.append("| collective | ranks | size | " + " | ".join(LABEL[i] for i in shown) + " |")
        L.append("|---|---|---|" + "---|" * len(shown))
        for coll in self.colls:
            for n in self.ranks[coll]:
                sizes = [s for s in self.sizes(coll, n)
                         if all(s in self.results.get((coll, n, i), {}) for i in ["collie", "ompi", "mpich"]
                                if self.results.get((coll, n, i)))]
                if not sizes:
                    continue
                s = sizes[0]
                cells = []
                for i in shown:
                    r = self.results.get((coll, n, i), {}).get(s)
                    cells.append(fmt_us(r["time_us"]) + ("*" if r and r.get("capped") else "") if r else "–")
                L.append(f"| {coll} | {n} | {fmt_size(s)} | " + " | ".join(cells) + " |")
        L.append("")
        L.append("(All-gather, reduce-scatter and all-to-all need one element per rank, so their smallest size "
                 "grows with the rank count.)")
        if getattr(self, "line_us", None):
            L.append("")
            L.append(f"A 2-rank all-reduce, all-gather, reduce-scatter or all-to-all needs the other rank's data: "
                     f"one cache line each way at least, {self.line_us:.3f} us on this machine with nothing else "
                     f"around it (bench/line_probe.c). A broadcast's root only writes.")
        L.append("")

        # Per collective
        for coll in self.colls:
            L.append(f"## {coll}: {TITLE[coll]}, busbw in GB/s (bus factor {BUS[coll]})")
            L.append("")
            L.append(f"![{coll}]({coll}.png)")
            L.append("")
            for n in self.ranks[coll]:
                impls = [i for i in self.impls(coll, n) if (coll, n, i) in self.results]
                L.append(f"### {coll}, {n} ranks")
                L.append("")
                extra = coll == "allreduce" and n == 2 and "collie-tcp" in impls and self.have_gloo
                head = ["size"] + [LABEL[i] for i in impls] + ["collie / best other"]
                reg = "collie-reg" in impls
                if reg:
                    head.append("collie_mem_alloc / best other")
                if extra:
                    head.append("collie tcp / best Gloo")
                L.append("| " + " | ".join(head) + " |")
                L.append("|" + "---|" * len(head))
                for s in self.sizes(coll, n):
                    cells = [fmt_size(s)]
                    for i in impls:
                        r = self.results[(coll, n, i)].get(s)
                        cells.append(fmt_bw(r["busbw"]) + ("*" if r.get("capped") else "") if r else "–")
                    best = self.best_other(coll, n, s)
                    for mine in ["collie"] + (["collie-reg"] if reg else []):
                        c = self.results.get((coll, n, mine), {}).get(s)
                        if c and best and best[1] > 0:
                            ratio = c["busbw"] / best[1]
                            cells.append(f"**{ratio:.2f}**" if ratio >= 1 else f"{ratio:.2f}")
                        else:
                            cells.append("–")
                    if extra:
                        t = self.results.get((coll, n, "collie-tcp"), {}).get(s)
                        g = [self.results.get((coll, n, x), {}).get(s) for x in ("gloo-ring", "gloo-hd")]
                        g = max((x["busbw"] for x in g if x), default=0)
                        cells.append(f"{t['busbw'] / g:.2f}" if t and g > 0 else "–")
                    L.append("| " + " | ".join(cells) + " |")
                L.append("")

        # Notes
        L.append("## Notes")
        L.append("")
        notes = list(self.notes)
        if self.settle_s > 0:
            notes.append(f"Before each round the run waited until bench/exchange_probe's exchange took under "
                         f"{SETTLED_RATIO} times its copies on one CPU "
                         f"(the VM's slow state for copies between CPUs, bench/README.md), {self.settle_waits:.0f} s "
                         f"in all; " + (f"these rounds started unsettled after {self.settle_s:.0f} s: "
                                        + "; ".join(self.unsettled) if self.unsettled else "every round started settled") + ".")
        for (coll, n, impl), msg in sorted(self.failed.items()):
            notes.append(f"{LABEL[impl]}, {coll} on {n} ranks: failed in at least one round ({msg}); "
                         "the table shows what the other rounds measured.")
        if self.capped:
            per = {}
            for (coll, n, impl), sizes in sorted(self.capped.items()):
                ss = sorted(sizes)
                span = fmt_size(ss[0]) if len(ss) == 1 else f"{fmt_size(ss[0])}–{fmt_size(ss[-1])}"
                per.setdefault(impl, []).append(f"{coll}/{n} ({len(ss)}: {span})")
            notes.append(f"Fewer operations than -w {self.warmup} -n {self.iters} (the {self.budget:g} s budget per "
                         "size; `*` in the tables), by implementation, collective/ranks (sizes): " +
                         "; ".join(f"**{LABEL[i]}**: " + ", ".join(v) for i, v in per.items()) + ".")
        if not notes:
            notes.append("Nothing failed and no run was capped.")
        for x in notes:
            L.append(f"- {x}")
        L.append("")
        L.append(f"Raw logs and every round's figures: `{os.path.relpath(self.out, ROOT)}/` "
                 "(`all-runs.jsonl`, `logs/`), not committed.")
        L.append("")
        path = os.path.join(self.results_dir, "latest.md")
        with open(path, "w") as f:
            f.write("\n".join(L))
        log(f"wrote {path}")

    def sizes(self, coll, n):
        s = set()
        for (c, k, _), rows in self.results.items():
            if c == coll and k == n:
                s.update(rows)
        return sorted(s)

    def best_other(self, coll, n, size):
        best = None
        for i in OTHERS:
            r = self.results.get((coll, n, i), {}).get(size)
            if r and (best is None or r["busbw"] > best[1]):
                best = (i, r["busbw"])
        return best

    def ratios(self, coll, n, impl="collie"):
        out, peak = [], (0, 0.0)
        for s in self.sizes(coll, n):
            c = self.results.get((coll, n, impl), {}).get(s)
            if c and c["busbw"] > peak[1]:
                peak = (s, c["busbw"])
            b = self.best_other(coll, n, s)
            if c and b and b[1] > 0:
                out.append((s, c["busbw"] / b[1], b[0]))
        return out, peak

    def plot(self, mem, sock):
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            self.notes.append("plots skipped: python3-matplotlib is not installed")
            return
        os.makedirs(self.results_dir, exist_ok=True)
        styles = {"collie": ("C0", "o", "-"), "collie-tcp": ("C0", "o", "--"), "collie-reg": ("C4", "*", "-"),
                  "ompi": ("C1", "s", "-"),
                  "mpich": ("C2", "^", "-"), "gloo-ring": ("C3", "v", "-"), "gloo-hd": ("C3", "D", ":")}
        for coll in self.colls:
            ranks = self.ranks[coll]
            fig, axes = plt.subplots(1, len(ranks), figsize=(4.2 * len(ranks), 3.8), sharey=True, squeeze=False)
            for ax, n in zip(axes[0], ranks):
                for impl in self.impls(coll, n):
                    rows = self.results.get((coll, n, impl))
                    if not rows:
                        continue
                    xs = sorted(s for s in rows if rows[s]["busbw"] > 0)
                    color, marker, ls = styles[impl]
                    ax.plot(xs, [rows[s]["busbw"] for s in xs], color=color, marker=marker, linestyle=ls,
                            markersize=3, linewidth=1.2, label=LABEL[impl])
                big = mem.get(256 << 20) if mem else None
                if big:
                    ax.axhline(big, color="grey", linestyle="--", linewidth=0.8, label="memcpy 256 MiB")
                if sock and coll == "allreduce":
                    ax.axhline(sock, color="grey", linestyle=":", linewidth=0.8, label="iperf3 loopback")
                ax.set_xscale("log", base=2)
                ticks = [1 << k for k in range(4, 27, 4) if self.minb <= 1 << k <= self.maxb]
                ax.set_xticks(ticks)
                ax.set_xticklabels([fmt_size(t).replace(" ", "").replace("iB", "") for t in ticks])
                ax.set_yscale("log")
                ax.set_title(f"{n} ranks", fontsize=9)
                ax.set_xlabel("size (bytes)", fontsize=8)
                ax.tick_params(labelsize=7)
                ax.grid(True, which="major", linewidth=0.3)
            axes[0][0].set_ylabel("busbw (GB/s)", fontsize=8)
            axes[0][-1].legend(fontsize=7, loc="lower right")
            fig.suptitle(f"{coll}: busbw vs size ({os.cpu_count()} cores)", fontsize=10)
            fig.tight_layout()
            path = os.path.join(self.results_dir, f"{coll}.png")
            fig.savefig(path, dpi=80)
            plt.close(fig)
            log(f"wrote {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build", help="collie's build directory (default build)")
    ap.add_argument("--quick", action="store_true", help="the BENCH_QUICK=1 subset")
    args = ap.parse_args()
    r = Runner(args)
    started = datetime.datetime.utcnow()
    os.makedirs(r.out, exist_ok=True)
    if os.path.exists(r.logs):
        shutil.rmtree(r.logs)
    os.makedirs(r.logs)
    if os.path.exists(os.path.join(r.out, "all-runs.jsonl")):
        os.unlink(os.path.join(r.out, "all-runs.jsonl"))
    log(f"{'quick' if r.quick else 'full'} run: sizes {r.minb}..{r.maxb} factor {r.factor}, "
        f"{r.repeats} round(s), -w {r.warmup} -n {r.iters}, budget {r.budget:g} s per size; logs in {r.out}")
    r.build_all()
    load0 = os.getloadavg()[0]
    mem = r.probe_memcpy()
    log("memcpy: " + ", ".join(f"{fmt_size(k)} {v:.2f} GB/s" for k, v in sorted(mem.items())))
    sock = r.probe_socket()
    log(f"loopback TCP (iperf3): {sock:.2f} GB/s" if sock else "loopback TCP: not measured")
    r.cma = r.probe_cma()
    r.tcp2 = r.probe_tcp_two_way()
    r.exchange = r.probe_exchange()
    r.yield_us = r.probe_yield()
    r.line_us = r.probe_line()
    r.copy_pair = r.probe_copy_pair()
    log(f"tcp_probe: {r.tcp2}" if r.tcp2 else "tcp_probe: not measured")
    log(f"process_vm_readv: {r.cma}" if r.cma else "process_vm_readv: not measured")
    r.run_all()
    load1 = os.getloadavg()[0]
    r.plot(mem, sock)
    r.write_report(r.machine_facts(), mem, sock, load0, load1, started)
    log(f"done in {r.elapsed / 60:.1f} min of measurement, {r.run_count} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())

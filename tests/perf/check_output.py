"""Runs one perf-test command and checks what it printed and how it exited.

usage: check_output.py [checks] -- COMMAND [ARGS...]

By default (nccl-tests layout) it asserts: exit status 0; every data row (a line not
starting with '#') has 13 columns; both #wrong columns are 0 on every row; the footer says
"Out of bounds values : 0 OK". Options add or change checks; see --help.
"""
import argparse
import json
import subprocess
import sys


def fail(msg, out="", err=""):
    print("FAIL: " + msg, file=sys.stderr)
    if out:
        print("--- stdout:\n" + out, file=sys.stderr)
    if err:
        print("--- stderr:\n" + err, file=sys.stderr)
    sys.exit(1)


def data_rows(out):
    return [l.split() for l in out.splitlines() if l.strip() and not l.startswith("#")]


def check_nccl(args, out, err):
    rows = data_rows(out)
    if not rows:
        fail("no data rows", out, err)
    for r in rows:
        if len(r) != 13:
            fail("a row has %d columns, not 13: %s" % (len(r), " ".join(r)), out, err)
    wrong = [r for r in rows if r[8] != "0" or r[12] != "0"]
    if args.expect_wrong:
        if not any(w not in ("0", "N/A") and int(w) > 0 for r in rows for w in (r[8], r[12])):
            fail("expected some #wrong > 0", out, err)
        if "# Out of bounds values" not in out or "FAILED" not in out:
            fail("expected the footer to say FAILED", out, err)
    else:
        if args.no_check:
            if any(r[8] != "N/A" or r[12] != "N/A" for r in rows):
                fail("with -c 0, #wrong should read N/A", out, err)
        elif wrong:
            fail("#wrong is not 0 on: %s" % " ".join(wrong[0]), out, err)
        if "# Out of bounds values : 0 OK" not in out:
            fail("the footer does not say 'Out of bounds values : 0 OK'", out, err)
    if "# Avg bus bandwidth" not in out:
        fail("no 'Avg bus bandwidth' footer", out, err)
    if args.ratio is not None:
        r_ = args.ratio
        for r in rows:
            alg, bus = float(r[6]), float(r[7])
            # Both are printed with 2 decimals: each may be off by 0.005.
            if abs(bus - alg * r_) > 0.005 * (1 + r_) + 1e-9:
                fail("busbw/algbw is not %.4f on: %s" % (r_, " ".join(r)), out, err)
    return rows


def check_hccl(args, out, err):
    heads = [l.split() for l in out.splitlines() if l.startswith("data_size")]
    if heads != [["data_size", "avg_time(us)", "alg_bandwidth(GB/s)", "check_result"]]:
        fail("no hccl-test column heading 'data_size avg_time(us) alg_bandwidth(GB/s) check_result'", out, err)
    rows = [r for r in data_rows(out) if r[0] != "data_size"]
    if not rows:
        fail("no data rows", out, err)
    for r in rows:
        if len(r) != 4:
            fail("an hccl row has %d columns, not 4: %s" % (len(r), " ".join(r)), out, err)
        want = "NULL" if args.no_check else "failed" if args.expect_wrong else "success"
        if r[3] != want:
            fail("check_result is %s, not %s" % (r[3], want), out, err)
        int(r[0]), float(r[1]), float(r[2])
    return rows


def check_csv(args, out, err):
    lines = [l for l in out.splitlines() if l.strip()]
    if not lines or not lines[0].startswith("collective,nranks,size,count,type,redop,root,time_us"):
        fail("no CSV header", out, err)
    rows = [l.split(",") for l in lines[1:]]
    ncol = len(lines[0].split(","))
    for r in rows:
        if len(r) != ncol:
            fail("a CSV row has %d fields, not %d" % (len(r), ncol), out, err)
        if not args.no_check and (r[10] != "0" or r[14] != "0"):
            fail("wrong is not 0 on: %s" % ",".join(r), out, err)
    return rows


def check_json(args, out, err):
    # python3 -m json.tool is the judge of "valid JSON", as the spec says.
    p = subprocess.run([sys.executable, "-m", "json.tool", args.json], capture_output=True, text=True)
    if p.returncode:
        fail("%s is not valid JSON: %s" % (args.json, p.stderr), out, err)
    with open(args.json) as f:
        doc = json.load(f)
    for k in ("collective", "nranks", "version", "transport", "algo", "results", "wrong", "avg_busbw"):
        if k not in doc:
            fail("JSON lacks '%s'" % k, out, err)
    if not doc["results"]:
        fail("JSON has no results", out, err)
    for r in doc["results"]:
        for place in ("out_of_place", "in_place"):
            m = r[place]
            if args.ratio is not None and m["algbw"] > 0:
                if abs(m["busbw"] / m["algbw"] - args.ratio) > 1e-4 * args.ratio:
                    fail("JSON busbw/algbw = %g, not %g" % (m["busbw"] / m["algbw"], args.ratio), out, err)
            if not args.expect_wrong and not args.no_check and m["wrong"] != 0:
                fail("JSON wrong = %r" % m["wrong"], out, err)
    return doc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--format", choices=("nccl", "hccl", "csv"), default="nccl")
    ap.add_argument("--rows", type=int, help="exact number of data rows")
    ap.add_argument("--ratio", type=float, help="busbw/algbw on every row")
    ap.add_argument("--json", help="a -J file to validate")
    ap.add_argument("--no-check", action="store_true", help="the command ran with -c 0")
    ap.add_argument("--expect-wrong", action="store_true", help="wrong results and a failing exit")
    ap.add_argument("--expect-usage", action="store_true", help="exit status 2 and usage on stderr")
    ap.add_argument("--timeout", type=float, default=100)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        ap.error("no command")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired as e:
        fail("timed out after %g s: %s" % (args.timeout, " ".join(cmd)), e.stdout or "", e.stderr or "")
    out, err, rc = p.stdout, p.stderr, p.returncode

    if args.expect_usage:
        if rc != 2:
            fail("exit status %d, not 2" % rc, out, err)
        if "usage:" not in err:
            fail("no usage on stderr", out, err)
        if out:
            fail("a usage error printed to stdout", out, err)
        print("ok: exit 2 with usage")
        return
    if args.expect_wrong:
        if rc == 0:
            fail("exit status 0 despite wrong results", out, err)
    elif rc != 0:
        fail("exit status %d" % rc, out, err)

    rows = {"nccl": check_nccl, "hccl": check_hccl, "csv": check_csv}[args.format](args, out, err)
    if args.rows is not None and len(rows) != args.rows:
        fail("%d data rows, not %d" % (len(rows), args.rows), out, err)
    if args.json:
        check_json(args, out, err)
    print("ok: %d rows, exit status %d" % (len(rows), rc))


if __name__ == "__main__":
    main()

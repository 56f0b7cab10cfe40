#!/usr/bin/env python3
"""The compile-time check on the realistic corpus (tests/corpus, docs/check-corpus.md).

Each program under the corpus is an ordinary crate of several files. For each:
  - the clean program must build with no error (its warnings, if any, are reported:
    what the check could not follow), and, with --run, run at the sizes it lists in
    corpus.json and print its OK line (it compares itself with a serial reference);
  - each planted bug in bugs.json (a text replacement in one file; its communicating call
    at `op_line` of that file, or of `op_file` when the call is in another) is compiled, and
    what the check says is compared with the bug's `expect`: "rejected" (a compile
    error naming the file and line of the communicating call, `src/pipeline.rs:42`, or
    spanned there), "rejected_elsewhere" (an error at another call), or "open" (not
    found yet: a known gap of the check, listed in docs/check-corpus.md).
Exit status 1 when any of these fails. Crates are copied under target/corpus, built
with one shared target directory (target/outside, shared with the other crates outside the
workspace), so the runtime compiles once.

--run runs each clean program as corpus.json lists; --runs K at most K of those runs: the
largest size, one that is not a power of two, then runs with flags not run yet (CI: 5).

--jobs N (default: the number of CPUs, at most 4) checks N programs at a time, each
worker with its own target directory (target/outside, target/corpus-1/target, ...): a bug's
`cargo check` is one rustc process, the check in it single-threaded, so on 2 cores
two workers take about half the time.
"""
import json, os, shutil, subprocess, sys, time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
corpus = os.environ.get("CORPUS", os.path.join(root, "tests", "corpus"))
work = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target")), "corpus")
argv = sys.argv[1:]
jobs = min(os.cpu_count() or 1, 4)
if "--jobs" in argv:
    i = argv.index("--jobs")
    jobs = int(argv[i + 1])
    del argv[i : i + 2]
# --runs K: at most K of each program's runs (corpus.json): the largest size, one that is
# not a power of two, then runs with flags not run yet (CI: 5).
most_runs = None
if "--runs" in argv:
    i = argv.index("--runs")
    most_runs = int(argv[i + 1])
    del argv[i : i + 2]
args = [a for a in argv if not a.startswith("--")]
run = "--run" in argv or most_runs is not None
worker = os.environ.get("CORPUS_WORKER")
if worker:
    work += "-" + worker if worker != "0" else ""
os.makedirs(work, exist_ok=True)
# The first worker builds in the target directory the other crates outside the workspace
# share (the user crate, the starter: scripts/user-crate-check.sh), so CI compiles
# the runtime's dependencies for them once.
outside = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target")), "outside")
env = dict(os.environ, CARGO_TARGET_DIR=os.path.join(work, "target") if worker not in (None, "0") else outside,
           CARGO_TERM_COLOR="never")
env.pop("RUSTFLAGS", None)
if run and shutil.which("cargo-spmd", path=env.get("PATH")) is None:
    # The clean programs run under the launcher a user installs (`cargo spmd run`): this
    # checkout's, installed under the target directory (scripts/install-launcher.sh).
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target"))
    subprocess.run(["cargo", "install", "--quiet", "--locked", "--path", os.path.join(root, "cargo-spmd"),
                    "--root", os.path.join(target, "spmd-install"),
                    "--target-dir", os.path.join(target, "spmd-install-build")], check=True)
    env["PATH"] = os.path.join(target, "spmd-install", "bin") + os.pathsep + env.get("PATH", "")
    os.environ["PATH"] = env["PATH"]


def copy(name):
    dst = os.path.join(work, name)
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(os.path.join(corpus, name), dst, ignore=shutil.ignore_patterns("target"))
    # The copy depends on this checkout's runtime wherever it sits.
    toml = os.path.join(dst, "Cargo.toml")
    text = open(toml).read()
    text = text.replace('path = "../../../dist-runtime"', 'path = "%s"' % os.path.join(root, "dist-runtime"))
    open(toml, "w").write(text)
    # Fresh times, so the clean build runs the check (and reports its cost) every time.
    for d, _, files in os.walk(os.path.join(dst, "src")):
        for f in files:
            os.utime(os.path.join(d, f))
    lock = os.path.join(root, "Cargo.lock")
    shutil.copy(lock, os.path.join(dst, "Cargo.lock"))
    return dst


def cargo(cwd, *a, timeout=900, extra_env=None):
    e = dict(env, **(extra_env or {}))
    p = subprocess.run(["cargo", *a], cwd=cwd, env=e, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stderr + p.stdout


failures = []
counts = {}
silent = []
names = args or sorted(d for d in os.listdir(corpus) if os.path.isfile(os.path.join(corpus, d, "Cargo.toml")))


def summary_and_exit():
    print()
    print("planted bugs:", ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    if silent:
        print("open with no warning (followed whole, not found):", ", ".join(silent))
    if failures:
        print(f"{len(failures)} failure(s):")
        for f in failures:
            print(" -", f.splitlines()[0][:300])
        sys.exit(1)
    print("corpus: every clean program builds (and is followed whole unless corpus.json says not); every planted "
          "bug is what bugs.json expects (rejected at its op, rejected elsewhere, or a known open gap)")
    sys.exit(0)


if not worker and jobs > 1 and len(names) > 1:
    # Workers: each program is checked by a child run of this script in a free slot,
    # each slot with its own target directory; a program's report is printed whole when
    # it ends, and the results are added up here.
    # The first program runs alone and builds the runtime and its dependencies (for
    # `build` and for `check`) in target/outside; a slot without its own target directory
    # yet gets a copy of that one (cargo's fingerprints are relative to the directory),
    # not a second compile of the same code beside the first.
    queue, running, results = list(names), {}, os.path.dirname(work)
    warm = False
    while queue or running:
        for k in range(jobs):
            if k > 0 and not warm:
                break
            if k not in running and queue:
                name = queue.pop(0)
                out = os.path.join(results, f"corpus-worker-{k}.json")
                if os.path.exists(out):
                    os.remove(out)
                cmd = [sys.executable, os.path.abspath(__file__), *(["--run"] if run else []),
                       *(["--runs", str(most_runs)] if most_runs is not None else []), name]
                e = dict(os.environ, CORPUS_WORKER=str(k), CORPUS_RESULT=out)
                log = open(out[: -len(".json")] + ".log", "w+")
                p = subprocess.Popen(cmd, env=e, stdout=log, stderr=subprocess.STDOUT, text=True)
                running[k] = (p, out, name, log)
        time.sleep(0.2)
        for k, (p, out, name, log) in list(running.items()):
            if p.poll() is None:
                continue
            del running[k]
            log.seek(0)
            text = log.read()
            log.close()
            print(text.split("\nplanted bugs:")[0].rstrip("\n"), flush=True)
            if not os.path.exists(out):
                failures.append(f"{name}: its check ended without results (exit {p.returncode}):\n{text[-2000:]}")
                continue
            if not warm:
                warm = True
                for j in range(1, jobs):
                    dst = os.path.join(f"{work}-{j}", "target")
                    if not os.path.isdir(os.path.join(dst, "debug")):
                        os.makedirs(dst, exist_ok=True)
                        subprocess.run(["cp", "-a", os.path.join(outside, "debug"), dst], check=True)
            r = json.load(open(out))
            for key, v in r["counts"].items():
                counts[key] = counts.get(key, 0) + v
            silent += r["silent"]
            failures += r["failures"]
    summary_and_exit()

for name in names:
    src = copy(name)
    t = time.time()
    times = os.path.join(work, name + ".times")
    if os.path.exists(times):
        os.remove(times)
    rc, out = cargo(src, "build", "--quiet", extra_env={"DIST_CHECK_TIMES": times})
    warn = [l for l in out.splitlines() if "dist_check_incomplete" in l]
    status = "ok" if rc == 0 else "FAILED"
    # The check's own cost (DIST_CHECK_TIMES: one line per entry, its time and steps).
    cost = ""
    if os.path.exists(times):
        entries = [l.split("\t") for l in open(times).read().splitlines() if l.count("\t") >= 3]
        cost = ", check " + "; ".join(f"{e[1]} {e[2]}, {e[3]}" for e in entries)
    print(f"{name}: clean build {status} ({time.time() - t:.0f} s{cost}, {len(warn)} construct(s) not followed)")
    for l in warn:
        print("   ", l[:400])
    if rc != 0:
        failures.append(f"{name}: the clean program does not build:\n{out[-3000:]}")
        continue
    meta_path = os.path.join(corpus, name, "corpus.json")
    meta = json.load(open(meta_path)) if os.path.exists(meta_path) else {}
    if warn and not meta.get("unfollowed_ok"):
        failures.append(f"{name}: the check could not follow the clean program:\n" + "\n".join(warn))
    if not warn and meta.get("unfollowed_ok"):
        failures.append(f"{name}: the clean program is now followed whole: set unfollowed_ok to false in corpus.json")
    if run:
        cases = meta.get("runs", [])
        if most_runs is not None and cases:
            # The largest size, a size that is not a power of two (uneven blocks), then
            # runs with flags not run yet (another mode), in the order corpus.json lists
            # them; at most `most_runs`.
            flags = lambda c: frozenset(a for a in c.get("args", []) if a.startswith("--"))
            odd = [c for c in cases if c["n"] > 2 and c["n"] & (c["n"] - 1)]
            picked = [max(cases, key=lambda c: c["n"])] + odd[:1]
            picked = [c for i, c in enumerate(picked) if c not in picked[:i]]
            for case in cases:
                if not flags(case) <= set().union(*map(flags, picked)):
                    picked.append(case)
            cases = picked[:most_runs]
        for case in cases:
            # Each clean program compares itself with a serial reference.
            n, a = case["n"], case.get("args", [])
            rc, out = cargo(src, "spmd", "run", "-n", str(n), "--", *a, timeout=300)
            ok = rc == 0 and "OK" in out
            print(f"  run -n {n} {' '.join(a)}: {'ok' if ok else 'FAILED'}")
            if not ok:
                failures.append(f"{name}: run -n {n} {a} failed:\n{out[-2000:]}")
    bugs = json.load(open(os.path.join(corpus, name, "bugs.json")))
    for b in bugs:
        path = os.path.join(src, b["file"])
        text = open(os.path.join(corpus, name, b["file"])).read()
        if text.count(b["find"]) != 1:
            failures.append(f"{name}/{b['id']}: the text to replace occurs {text.count(b['find'])} times")
            continue
        open(path, "w").write(text.replace(b["find"], b["replace"]))
        t = time.time()
        rc, out = cargo(src, "check", "--quiet")
        open(path, "w").write(text)
        # Each error with its later lines (rustc indents a message's lines under its first).
        errors, inside = [], False
        for l in out.splitlines():
            if l.startswith("error"):
                errors.append(l)
                inside = True
            elif inside and l.startswith("       "):
                errors[-1] += " " + l.strip()
            else:
                inside = False
        where = f"{b.get('op_file', b['file'])}:{b['op_line']}"
        named = any(where in l for l in errors) or f"--> {where}:" in out
        got = "rejected" if rc != 0 and named else ("rejected_elsewhere" if rc != 0 else "open")
        want = b.get("expect", "rejected")
        first = errors[0][:600] if errors else "(no error)"
        # An open bug the check warned about (a construct it left to run time) is not one
        # it passed in silence: say which.
        warned = ", warned" if got == "open" and "dist_check_incomplete" in out else ""
        if got == "open" and not warned:
            silent.append(f"{name}/{b['id']}")
        print(f"  {b['id']} ({b['class']}): {got}{warned} ({time.time() - t:.0f} s){'' if got == want else ' — expected ' + want}")
        if got != want:
            print(f"      op at {where}; got: {first}")
        # A bug the check found must stay found; one it now finds (or finds at another
        # place) is news: update the expectation in bugs.json.
        if got != want:
            failures.append(f"{name}/{b['id']}: {got}, bugs.json expects {want}: {first}")
        counts[got] = counts.get(got, 0) + 1
if os.environ.get("CORPUS_RESULT"):
    json.dump({"counts": counts, "silent": silent, "failures": failures}, open(os.environ["CORPUS_RESULT"], "w"))
summary_and_exit()

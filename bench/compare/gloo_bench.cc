// gloo_bench: float32 sum all-reduce through Gloo (Debian's libgloo-dev, TCP transport on
// 127.0.0.1), timed the way collie's perf suite times collie_allreduce, so
// bench/compare/run.py can put the figures side by side.
//
//   gloo_bench -p N -a ring|hd [-b 8] [-e 64M] [-f 2] [-n 20] [-w 5] [-B SEC] [-l LABEL]
//
// The program forks N ranks itself. They meet through a gloo::rendezvous::FileStore in a
// fresh temporary directory (removed at the end); each rank's TCP device listens on
// 127.0.0.1 at a port the kernel picks, so parallel runs never collide.
//
// Algorithms:
//   ring  gloo::allreduce() with AllreduceOptions::Algorithm::RING: reduce-scatter then
//         all-gather around a ring, in segments of at most 1 MiB (what PyTorch's gloo
//         backend calls); out of place (setInput/setOutput), like collie's out-of-place row.
//   hd    gloo::AllreduceHalvingDoubling<float>: recursive halving reduce-scatter, then
//         doubling all-gather (the legacy Algorithm class); in place only.
//
// Timing, per size, as tools/perf does: -w warm-up operations, two gloo barriers, -n timed
// operations; time per operation averaged over ranks, busbw = algbw * 2(n-1)/n; rank 0
// prints one JSON line per size. -B SEC caps the counts when a size would take longer
// than SEC (see mpi_coll_bench.c; the line then says "capped": true). One checked
// operation on known inputs follows each measurement, outside the timed region.
#include <gloo/algorithm.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace {

struct Opts {
  int nranks = 2, iters = 20, warmup = 5;
  size_t minb = 8, maxb = 64u << 20;
  double factor = 2, budget = 0;
  std::string algo = "ring", label;
};

[[noreturn]] void usage(const char *why) {
  fprintf(stderr, "gloo_bench: %s\nusage: gloo_bench -p N -a ring|hd [-b MIN] [-e MAX] [-f F] [-n N] [-w W] [-B SEC] [-l LABEL]\n", why);
  exit(2);
}

size_t parse_size(const char *s) {
  char *end;
  double v = strtod(s, &end);
  switch (*end) {
    case 'k': case 'K': v *= 1024.0; end++; break;
    case 'm': case 'M': v *= 1024.0 * 1024; end++; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; end++; break;
    default: break;
  }
  if (*end == 'B' || *end == 'b') end++;
  if (*end || v < 0) usage("bad size (use e.g. 8, 64K, 64M)");
  return (size_t)v;
}

double now() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

float *alloc_touched(size_t elems) {
  void *p = nullptr;
  size_t bytes = elems ? elems * sizeof(float) : 64;
  if (posix_memalign(&p, 4096, bytes)) throw std::runtime_error("out of memory");
  memset(p, 0, bytes);
  return static_cast<float *>(p);
}

float val(int r, size_t i) { return (float)((r + 1) * (int)(i % 5 + 1)); }

// One scalar reduced over all ranks (timings, error counts); fn is gloo::sum or gloo::max.
double reduce_scalar(const std::shared_ptr<gloo::Context> &ctx, double x,
                     void (*fn)(void *, const void *, const void *, size_t)) {
  double in = x, out = 0;
  gloo::AllreduceOptions o(ctx);
  o.setInput(&in, 1);
  o.setOutput(&out, 1);
  o.setReduceFunction(fn);
  o.setTag(2);
  gloo::allreduce(o);
  return out;
}

void barrier(const std::shared_ptr<gloo::Context> &ctx) {
  gloo::BarrierOptions o(ctx);
  o.setTag(3);
  gloo::barrier(o);
}

// One operation of the chosen algorithm on fixed buffers, built once per size.
struct Op {
  virtual ~Op() noexcept(false) {}
  virtual void run() = 0;
  virtual float *result() = 0;
};

struct RingOp : Op {
  gloo::AllreduceOptions o;
  float *out;
  RingOp(const std::shared_ptr<gloo::Context> &ctx, float *send, float *recv, size_t count) : o(ctx), out(recv) {
    o.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    o.setInput(send, count);
    o.setOutput(recv, count);
    void (*fn)(void *, const void *, const void *, size_t) = &gloo::sum<float>;
    o.setReduceFunction(fn);
    o.setTag(1);
  }
  void run() override { gloo::allreduce(o); }
  float *result() override { return out; }
};

struct HdOp : Op {
  gloo::AllreduceHalvingDoubling<float> a;
  float *buf;
  HdOp(const std::shared_ptr<gloo::Context> &ctx, float *recv, size_t count)
      : a(ctx, std::vector<float *>{recv}, (int)count), buf(recv) {}
  void run() override { a.run(); }
  float *result() override { return buf; }
};

int rank_main(const Opts &o, int rank, const std::string &dir) {
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1"; // loopback only; the port is the kernel's choice
  attr.ai_family = AF_INET;
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(dir);
  auto rctx = std::make_shared<gloo::rendezvous::Context>(rank, o.nranks);
  rctx->setTimeout(std::chrono::seconds(300));
  rctx->connectFullMesh(store, dev);
  std::shared_ptr<gloo::Context> ctx = rctx;
  const int n = o.nranks;

  size_t cap = o.maxb / sizeof(float);
  float *send = alloc_touched(cap), *recv = alloc_touched(cap);
  void (*fsum)(void *, const void *, const void *, size_t) = &gloo::sum<double>;
  void (*fmax)(void *, const void *, const void *, size_t) = &gloo::max<double>;
  // Connections warm before the first measurement, as in mpi_coll_bench (WARM_CONNECTIONS).
  const int warm_connections = 32;
  for (int i = 0; i < warm_connections; i++) reduce_scalar(ctx, 0, fsum);
  barrier(ctx);

  for (double b = (double)o.minb; b <= (double)o.maxb * 1.0000001; b *= o.factor) {
    size_t count = (size_t)b / sizeof(float), bytes = count * sizeof(float);
    if (!count) continue;
    for (size_t i = 0; i < count; i++) send[i] = recv[i] = (float)((int)((i * 7 + (size_t)rank * 13) % 7) - 3);
    std::unique_ptr<Op> op;
    if (o.algo == "ring") op.reset(new RingOp(ctx, send, recv, count));
    else op.reset(new HdOp(ctx, recv, count));

    int w = o.warmup, iters = o.iters, capped = 0, used_w = 0;
    if (o.budget > 0) {
      double t0 = now();
      op->run();
      double tmax = reduce_scalar(ctx, now() - t0, fmax);
      w = o.warmup > 0 ? o.warmup - 1 : 0;
      if (tmax * (1 + w + iters) > o.budget && w > 0) { // first operations may pay one-time costs
        t0 = now();
        op->run();
        tmax = reduce_scalar(ctx, now() - t0, fmax);
        w--;
        used_w++;
      }
      if (tmax * (1 + used_w + w + iters) > o.budget) {
        capped = 1;
        int fit = (int)(o.budget / (tmax > 1e-9 ? tmax : 1e-9)) - 1 - used_w;
        w = w < 1 ? w : 1;
        iters = fit - w < iters ? fit - w : iters;
        if (iters < 2) iters = 2;
      }
    }
    for (int i = 0; i < w; i++) op->run();
    barrier(ctx); // everyone starts the clock together; two, as tools/perf
    barrier(ctx);
    double t0 = now();
    for (int i = 0; i < iters; i++) op->run();
    double t = (now() - t0) * 1e6 / iters;
    double us = reduce_scalar(ctx, t, fsum) / n;

    // Check: inputs val(r, i); every rank must hold n(n+1)/2 * (i % 5 + 1).
    for (size_t i = 0; i < count; i++) send[i] = recv[i] = val(rank, i);
    op->run();
    long wrong = 0;
    float tri = (float)(n * (n + 1) / 2);
    float *res = op->result();
    for (size_t i = 0; i < count; i++)
      if (res[i] != tri * (float)(i % 5 + 1)) wrong++;
    long total = (long)reduce_scalar(ctx, (double)wrong, fsum);

    if (rank == 0) {
      double algbw = us > 0 ? (double)bytes / 1e3 / us : 0;
      printf("{\"impl\": \"%s\", \"collective\": \"allreduce\", \"nranks\": %d, \"size\": %zu, \"count\": %zu, "
             "\"time_us\": %.6g, \"algbw\": %.6g, \"busbw\": %.6g, \"iters\": %d, \"warmup_iters\": %d, "
             "\"capped\": %s, \"wrong\": %ld}\n",
             o.label.c_str(), n, bytes, count, us, algbw, algbw * 2.0 * (n - 1) / n, iters,
             o.budget > 0 ? w + 1 + used_w : w, capped ? "true" : "false", total);
      fflush(stdout);
      if (total) fprintf(stderr, "gloo_bench: size %zu: %ld wrong elements\n", bytes, total);
    }
  }
  barrier(ctx);
  free(send);
  free(recv);
  return 0;
}

void remove_dir(const std::string &dir) {
  // FileStore writes one flat file per key; remove them, then the directory.
  std::string cmd = "rm -rf -- '" + dir + "'";
  if (system(cmd.c_str()) != 0) fprintf(stderr, "gloo_bench: could not remove %s\n", dir.c_str());
}

} // namespace

int main(int argc, char **argv) {
  Opts o;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (i + 1 >= argc) usage("a flag needs a value");
    const char *v = argv[++i];
    if (!strcmp(a, "-p")) o.nranks = atoi(v);
    else if (!strcmp(a, "-a")) o.algo = v;
    else if (!strcmp(a, "-b")) o.minb = parse_size(v);
    else if (!strcmp(a, "-e")) o.maxb = parse_size(v);
    else if (!strcmp(a, "-f")) o.factor = atof(v);
    else if (!strcmp(a, "-n")) o.iters = atoi(v);
    else if (!strcmp(a, "-w")) o.warmup = atoi(v);
    else if (!strcmp(a, "-B")) o.budget = atof(v);
    else if (!strcmp(a, "-l")) o.label = v;
    else usage("unknown flag");
  }
  if (o.nranks < 1 || o.nranks > 256) usage("-p wants 1..256");
  if (o.algo != "ring" && o.algo != "hd") usage("-a wants ring or hd");
  if (o.factor < 1.01 || o.iters < 1 || o.warmup < 0 || o.minb > o.maxb) usage("bad -f, -n, -w or -b/-e");
  if (o.label.empty()) o.label = "gloo-" + o.algo;

  const char *tmp = getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/gloo_bench.XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) {
    perror("gloo_bench: mkdtemp");
    return 3;
  }
  std::string dir(buf.data());
  fflush(stdout);

  std::vector<pid_t> pids;
  pid_t parent = getpid();
  for (int r = 0; r < o.nranks; r++) {
    pid_t pid = fork();
    if (pid < 0) {
      perror("gloo_bench: fork");
      for (pid_t p : pids) kill(p, SIGKILL);
      remove_dir(dir);
      return 3;
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL); // never outlive the launcher
      if (getppid() != parent) _exit(3);
      int rc;
      try {
        rc = rank_main(o, r, dir);
      } catch (const std::exception &e) {
        fprintf(stderr, "gloo_bench: rank %d: %s\n", r, e.what());
        rc = 3;
      }
      fflush(stdout);
      _exit(rc);
    }
    pids.push_back(pid);
  }

  // Wait for all; the first failure stops the rest.
  int status_out = 0;
  size_t left = pids.size();
  while (left) {
    int st;
    pid_t p = wait(&st);
    if (p < 0) break;
    left--;
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (rc && !status_out) {
      status_out = rc;
      for (pid_t q : pids)
        if (q != p) kill(q, SIGKILL);
    }
  }
  remove_dir(dir);
  return status_out;
}

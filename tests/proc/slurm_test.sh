#!/usr/bin/env bash
# Slurm, for real: slurmctld and one slurmd on each of two "hosts" (network namespaces with
# their own /dev/shm, tests/common/netns_hosts.sh), so that the commands README.md and
# docs/perf.md show run as a user types them:
#   1. `srun -O -n 8 p2p_check` (README's srun -n 8, on 2 CPUs): one host, no address; the
#      ranks meet through the job's file and use shared memory. Ranks bound by srun
#      --cpu-bind (task/affinity) to a core each poll; bound to one core together they yield.
#   2. `COLLIE_ROOT_ADDR=hostA:29500 srun -N 2 --ntasks-per-node 2`: coll_check with shared
#      memory inside each host and TCP across; broadcast_perf -r all as docs/perf.md shows,
#      in an allocation whose first node gives COLLIE_ROOT_ADDR (README.md's recipe).
#   3. The same without COLLIE_ROOT_ADDR: every rank fails saying what to set.
#   4. srun --mpi=pmi2 (PMI_RANK/PMI_SIZE as well as SLURM_PROCID), and two job steps of one
#      allocation on one host at once (each meets its own ranks only).
#   5. Inherited variables: a program started by an sbatch -n 4 script itself fails at once
#      saying so; torchrun-style workers under srun take RANK/WORLD_SIZE, not Slurm's.
#   6. sbatch -N 2 scripts that run mpirun (Open MPI) and mpiexec (MPICH).
#   7. scripts/pre-test-check --expect-hosts 2 srun -N 2 --ntasks-per-node 1.
# The cluster is private: configuration, state and logs in a temporary directory,
# auth/none (no munge), daemons on the namespaces' own ports. Needs root, slurmctld,
# slurmd and srun (scripts/install-deps.sh installs them), ip, unshare and nsenter;
# fails, never skips, without them.
#   slurm_test.sh BIN_DIR SOURCE_DIR
set -u
bin=$1
src=$2
fail() {
  echo "FAIL: $*" >&2
  for f in "$dir"/*.log; do echo "--- $f" >&2; tail -n 15 "$f" >&2; done
  exit 1
}
for c in slurmctld slurmd srun sinfo sbatch mpirun.openmpi mpiexec.mpich; do command -v $c >/dev/null || fail "$c is missing (scripts/install-deps.sh)"; done
dir=$(mktemp -d)
. "$src/tests/common/netns_hosts.sh"
netns_hosts_trap "$dir"
net=10.231.91
# slurmd wants a cgroup v1 hierarchy named systemd, which `ip netns exec` hides by
# mounting a fresh /sys: give each host one (the named hierarchy the machine has).
netns_hosts_up csl$$ "$dir" $net 2 \
  "mount -t tmpfs cgroup /sys/fs/cgroup && mkdir /sys/fs/cgroup/systemd &&
   mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd"
hostA=${holders[0]}
hostB=${holders[1]}

# The nodes have this machine's CPUs, so that task/affinity binds to CPUs that exist; more
# ranks than CPUs take srun -O (--overcommit), as on any cluster.
ncpus=$(nproc)
[ "$ncpus" -ge 2 ] || fail "the binding checks need 2 CPUs, and this process may use $ncpus"
# Job ids start at a random number: the ranks of one host meet through /tmp/collie-UID-slurm-
# JOB.STEP.id, and this machine's /tmp outlives the cluster (a run killed before its rank 0
# removed the file must not hand its address to the next run's job 1).
mkdir -p "$dir/state" "$dir/spool.hostA" "$dir/spool.hostB"
cat >"$dir/slurm.conf" <<EOF
ClusterName=collietest
FirstJobId=$((1000 + RANDOM * 1000))
SlurmctldHost=hostA($net.1)
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool.%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.%n.log
ProctrackType=proctrack/pgid
TaskPlugin=task/affinity
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=hostA NodeAddr=$net.1 CPUs=$ncpus State=UNKNOWN
NodeName=hostB NodeAddr=$net.2 CPUs=$ncpus State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=10 State=UP OverSubscribe=FORCE
EOF
export SLURM_CONF=$dir/slurm.conf
unset COLLIE_ROOT_ADDR MASTER_ADDR MASTER_PORT COLLIE_RANK COLLIE_NRANKS COLLIE_HOST_ID COLLIE_TRANSPORT COLLIE_SOCKET_IFNAME COLLIE_SPIN
on "$hostA" slurmctld -D -i >/dev/null 2>&1 &
on "$hostA" slurmd -D -N hostA >/dev/null 2>&1 &
on "$hostB" slurmd -D -N hostB >/dev/null 2>&1 &
up=0
for _ in $(seq 150); do
  [ "$(on "$hostA" sinfo -h -o %T 2>/dev/null | sort -u)" = idle ] && up=1 && break
  sleep 0.2
done
[ $up = 1 ] || fail "the private Slurm cluster did not come up within 30 s: $(on "$hostA" sinfo 2>&1)"
echo "== Slurm $(srun --version | awk '{print $2}') up: hostA and hostB idle"

# srun_on HOST OUT ARGS...: srun from that host, with a time limit, output to DIR/OUT.
srun_on() {
  local h=$1 out=$2
  shift 2
  timeout -s KILL 90 nsenter -t "$h" -m -n -u srun "$@" >"$dir/$out" 2>&1
}
# ok OUT N WHAT: OUT has N ranks' success lines.
ok() {
  local n
  n=$(grep -c "$3" "$dir/$1")
  [ "$n" = "$2" ] || { cat "$dir/$1"; fail "$1: $n of $2 ranks said '$3'"; }
}

export COLLIE_CONNECT_TIMEOUT=20 COLLIE_EXEC_TIMEOUT=60
srun_on "$hostA" one.out -O -n 8 env COLLIE_DEBUG=INFO COLLIE_DEBUG_SUBSYS=INIT,BOOTSTRAP "$bin/p2p_check" ||
  { cat "$dir/one.out"; fail "srun -n 8 p2p_check failed"; }
ok one.out 8 "p2p_check: rank [0-7] of 8 OK"
grep -q "launched by Slurm as rank 0 of 8 (job key 'slurm-[0-9]*\.0')" "$dir/one.out" ||
  { cat "$dir/one.out"; fail "rank 0 did not say that Slurm launched it"; }
grep -q "rank 0 of 8, 8 on this host; peers 0:self 1:shm 2:shm 3:shm 4:shm 5:shm 6:shm 7:shm" "$dir/one.out" ||
  { cat "$dir/one.out"; fail "8 ranks of one host should use shared memory"; }
key=$(sed -n "s/.*launched by Slurm as rank 0 of 8 (job key '\(.*\)')/\1/p" "$dir/one.out")
[ -e "/tmp/collie-$(id -u)-$key.id" ] && fail "the job's meeting file /tmp/collie-$(id -u)-$key.id was left behind"
echo "PASS: srun -O -n 8 on one host, shared memory, no address needed"

# bound BIND WANT: 2 ranks under srun --cpu-bind=BIND both say WANT (docs/tuning.md: ranks
# bound to a core each are not oversubscribed, ranks bound to one core together are).
bound() {
  srun_on "$hostA" bind.out -n 2 --cpu-bind="$1" env COLLIE_DEBUG=INFO COLLIE_DEBUG_SUBSYS=INIT "$bin/p2p_check" ||
    { cat "$dir/bind.out"; fail "srun --cpu-bind=$1 -n 2 failed"; }
  ok bind.out 2 "COLLIE INFO INIT 2 ranks on this host, $2"
}
read -r c0 c1 <<<"$(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0))[:2])')"
bound cores "2 cores: poll 20 us"
bound map_cpu:$c0,$c1 "2 cores: poll 20 us"
bound map_cpu:$c0,$c0 "1 cores: poll 0 us"
echo "PASS: srun --cpu-bind=cores (a core each: polls) and map_cpu:$c0,$c0 (one core: yields at once)"

args=(--dtypes quick --coll allreduce,allgather,broadcast,reduce_scatter,alltoall,p2p)
COLLIE_ROOT_ADDR=hostA:29500 srun_on "$hostA" two.out -N 2 --ntasks-per-node 2 \
  env COLLIE_DEBUG=INFO COLLIE_DEBUG_SUBSYS=INIT "$bin/coll_check" "${args[@]}" ||
  { cat "$dir/two.out"; fail "coll_check on 2 x 2 ranks failed"; }
ok two.out 4 "coll_check: rank [0-3]: .* cases OK"
for want in "hostA:.*rank 0 of 4, 2 on this host; peers 0:self 1:shm 2:tcp 3:tcp" \
  "hostB:.*rank 3 of 4, 2 on this host; peers 0:tcp 1:tcp 2:shm 3:self"; do
  grep -q "$want" "$dir/two.out" || { cat "$dir/two.out"; fail "no line '$want'"; }
done
# README.md's batch-script recipe: rank 0's host is the allocation's first node.
timeout -s KILL 90 nsenter -t "$hostB" -m -n -u salloc -N 2 --ntasks-per-node 2 sh -c \
  'export COLLIE_ROOT_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -1):29500
   srun -N 2 --ntasks-per-node 2 "$0" -r all -b 8 -e 1M -f 32 -n 5 -w 1' "$bin/broadcast_perf" >"$dir/bcast.out" 2>&1 ||
  { cat "$dir/bcast.out"; fail "broadcast_perf -r all under salloc and srun failed"; }
grep -q "^# Avg bus bandwidth" "$dir/bcast.out" && ! grep -q "^# Out of bounds values : [1-9]" "$dir/bcast.out" ||
  { cat "$dir/bcast.out"; fail "broadcast_perf -r all under srun did not check out"; }
echo "PASS: COLLIE_ROOT_ADDR=hostA:29500 srun -N 2 --ntasks-per-node 2: shm inside hosts, TCP across"

srun_on "$hostA" noaddr.out -N 2 --ntasks-per-node 2 "$bin/p2p_check" && fail "2 hosts without an address succeeded"
ok noaddr.out 4 "collie_comm_init_env on rank [0-3]: the 4 ranks span several hosts; set COLLIE_ROOT_ADDR=host:port"
ok noaddr.out 4 "export COLLIE_ROOT_ADDR=\$(scontrol show hostnames \"\$SLURM_JOB_NODELIST\" | head -1):29500)"
echo "PASS: srun -N 2 without COLLIE_ROOT_ADDR: every rank says to set it"

srun_on "$hostB" pmi2.out --mpi=pmi2 -O -n 3 -w hostB env COLLIE_DEBUG=INFO COLLIE_DEBUG_SUBSYS=BOOTSTRAP "$bin/p2p_check" ||
  { cat "$dir/pmi2.out"; fail "srun --mpi=pmi2 -n 3 failed"; }
ok pmi2.out 3 "p2p_check: rank [0-2] of 3 OK"
grep -q "launched by PMI .* as rank 0 of 3 (job key 'slurm-[0-9]*\.0')" "$dir/pmi2.out" ||
  { cat "$dir/pmi2.out"; fail "under srun --mpi=pmi2 rank 0 should read PMI_RANK and meet by Slurm's job id"; }
# Two steps of one allocation on hostB at once: the same job id, steps 0 and 1.
timeout -s KILL 90 nsenter -t "$hostB" -m -n -u salloc -O -N 1 -n 4 -w hostB sh -c \
  "export COLLIE_DEBUG=INFO COLLIE_DEBUG_SUBSYS=BOOTSTRAP
   srun --overlap -O -n 2 $bin/coll_check --dtypes quick --coll allreduce >$dir/step0.out 2>&1 & a=\$!
   srun --overlap -O -n 2 $bin/coll_check --dtypes quick --coll allreduce >$dir/step1.out 2>&1; b=\$?
   wait \$a && [ \$b = 0 ]" >"$dir/salloc.out" 2>&1 ||
  { cat "$dir"/salloc.out "$dir"/step*.out; fail "two job steps at once on one host failed"; }
ok step0.out 2 "coll_check: rank [0-1]: .* cases OK"
ok step1.out 2 "coll_check: rank [0-1]: .* cases OK"
keys=$(cat "$dir"/step*.out | sed -n "s/.*launched by Slurm as rank 0 of 2 (job key '\(.*\)')/\1/p" | sort -u | wc -l)
[ "$keys" = 2 ] || { cat "$dir"/step*.out; fail "the two steps' rank 0s did not meet by two job keys"; }
echo "PASS: srun --mpi=pmi2, and two steps of one allocation at once on one host"

# Variables a process inherits from Slurm without being one of its tasks. A program run
# straight from an sbatch -n 4 script sees SLURM_PROCID=0 and SLURM_NTASKS=4: it must fail
# at once saying so, not wait for 3 ranks until COLLIE_CONNECT_TIMEOUT (20 s here); with
# -n 1 it is the one rank. A torchrun worker under srun sees the torchrun agent's
# SLURM_PROCID and SLURM_NTASKS besides its own RANK and WORLD_SIZE: torchrun's count.
batch() {
  timeout -s KILL 90 nsenter -t "$hostA" -m -n -u sbatch --wait -o "$dir/$1" "${@:2}" >/dev/null 2>&1
}
# (Timed inside the script: sbatch --wait itself looks at the job every few seconds.)
batch batch4.out -w hostA -n 4 --wrap "s=\$(date +%s); $bin/p2p_check; rc=\$?; echo took \$((\$(date +%s) - s)) s; exit \$rc" &&
  { cat "$dir/batch4.out"; fail "a lone process of sbatch -n 4 succeeded"; }
want="SLURM_PROCID=0 and SLURM_NTASKS=4 do not describe this process: they are the environment of a Slurm batch script"
grep -q "$want" "$dir/batch4.out" || { cat "$dir/batch4.out"; fail "sbatch -n 4 running p2p_check alone: no '$want'"; }
took=$(sed -n 's/^took \([0-9]*\) s$/\1/p' "$dir/batch4.out")
[ -n "$took" ] && [ "$took" -le 5 ] || { cat "$dir/batch4.out"; fail "the lone process took ${took:-?} s to fail (COLLIE_CONNECT_TIMEOUT=20)"; }
batch batch1.out -w hostA -n 1 --wrap "$bin/p2p_check" || { cat "$dir/batch1.out"; fail "sbatch -n 1 running p2p_check failed"; }
ok batch1.out 1 "p2p_check: rank 0 of 1 OK"
srun_on "$hostA" torch.out -N 2 --ntasks-per-node 1 sh -c 'for i in 0 1; do
    RANK=$((SLURM_PROCID * 2 + i)) WORLD_SIZE=4 LOCAL_RANK=$i LOCAL_WORLD_SIZE=2 TORCHELASTIC_RUN_ID=t$SLURM_JOB_ID \
      MASTER_ADDR=hostA MASTER_PORT=29400 "$0" & done; wait; wait' "$bin/p2p_check" ||
  { cat "$dir/torch.out"; fail "torchrun-style workers under srun failed"; }
ok torch.out 4 "p2p_check: rank [0-3] of 4 OK"
echo "PASS: sbatch -n 4 running a rank alone fails at once ($took s), -n 1 runs; torchrun workers under srun count as torchrun's"

# The usual HPC launch: an sbatch script that runs mpirun or mpiexec, which start their
# daemons on the other node through Slurm (the ranks carry OMPI_*/PMI_* and a step's
# SLURM_* at once).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
batch ompi.out -N 2 --ntasks-per-node 2 --wrap "COLLIE_ROOT_ADDR=hostA:29500 mpirun.openmpi -x COLLIE_ROOT_ADDR \
  $bin/coll_check --dtypes quick --coll allreduce,alltoall,broadcast" ||
  { cat "$dir/ompi.out"; fail "sbatch running Open MPI's mpirun on 2 nodes failed"; }
ok ompi.out 4 "coll_check: rank [0-3]: .* cases OK"
batch mpich.out -N 2 --ntasks-per-node 2 --wrap "mpiexec.mpich -genv COLLIE_ROOT_ADDR hostA:29500 \
  $bin/coll_check --dtypes quick --coll allreduce,alltoall,broadcast" ||
  { cat "$dir/mpich.out"; fail "sbatch running MPICH's mpiexec on 2 nodes failed"; }
ok mpich.out 4 "coll_check: rank [0-3]: .* cases OK"
echo "PASS: sbatch -N 2 scripts running mpirun (Open MPI) and mpiexec (MPICH)"

out=$(timeout -s KILL 120 nsenter -t "$hostA" -m -n -u "$src/scripts/pre-test-check" --build "$(dirname "$bin")" \
  --expect-hosts 2 srun -N 2 --ntasks-per-node 1 2>&1)
rc=$?
echo "$out"
[ $rc = 0 ] || fail "pre-test-check through srun failed ($rc)"
for h in hostA hostB; do echo "$out" | grep -q "$h" || fail "pre-test-check did not hear from $h"; done
echo "PASS: scripts/pre-test-check --expect-hosts 2 srun -N 2 --ntasks-per-node 1"

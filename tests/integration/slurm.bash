# slurm.bash - a real single-node Slurm cluster for a test, from Debian's
# packages (slurmctld, slurmd, slurm-client, munge): munged, slurmctld and
# slurmd run in the foreground as children of the test, with their config,
# key, sockets, state and logs under $T/slurm, on ports nobody else holds.
# The node has one "GPU" (gres gpu:1 backed by /dev/null), so a job that
# asks for --gres=gpu:1 sees CUDA_VISIBLE_DEVICES=0 as on a GPU node. The
# credential lifetime is 5 s (the least it takes), not 120: Slurm holds a requeued job back
# for that long.
#
# Usage (after lib.bash):  need_slurm; slurm_start || ...; ...; slurm_stop
# SLURM_CONF is exported for the Slurm commands the test and vkinrctl run.

SLURM_PIDS=()

# Skips every planned test when the Slurm daemons are not installed.
need_slurm() {
	local d
	for d in slurmctld slurmd munged sbatch; do
		if ! command -v "$d" >/dev/null && [ ! -x "/usr/sbin/$d" ]; then
			for i in $(seq 1 "$TAP_PLAN"); do
				echo "ok $i # SKIP $d is not installed (Debian: slurmctld slurmd slurm-client munge)"
			done
			trap - EXIT; rm -rf "$T"; exit 0
		fi
	done
	if [ "$(id -u)" != 0 ]; then
		for i in $(seq 1 "$TAP_PLAN"); do
			echo "ok $i # SKIP a private Slurm cluster needs root (SlurmUser=root)"
		done
		trap - EXIT; rm -rf "$T"; exit 0
	fi
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

slurm_start() {
	local S=$T/slurm
	mkdir -p "$S/state" "$S/spool" "$S/munge"
	chmod 755 "$T" "$S" "$S/munge"
	dd if=/dev/urandom of="$S/munge.key" bs=1024 count=1 2>/dev/null
	chmod 400 "$S/munge.key"
	local ctld_port slurmd_port
	ctld_port=$(free_port) slurmd_port=$(free_port)
	cat >"$S/slurm.conf" <<EOF
ClusterName=vkinrtest
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$S/munge/munge.socket,cred_expire=5
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerParameters=batch_sched_delay=0,sched_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
KillWait=10
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
GresTypes=gpu
NodeName=localhost CPUs=$(nproc) RealMemory=1000 Gres=gpu:1 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
	cat >"$S/gres.conf" <<EOF
AutoDetect=off
NodeName=localhost Name=gpu File=/dev/null
EOF
	export SLURM_CONF=$S/slurm.conf
	munged -F --force --socket="$S/munge/munge.socket" --key-file="$S/munge.key" \
		--pid-file="$S/munged.pid" --log-file="$S/munged.log" \
		--seed-file="$S/munged.seed" >>"$S/munged.out" 2>&1 &
	SLURM_PIDS+=($!)
	for _ in $(seq 1 50); do [ -S "$S/munge/munge.socket" ] && break; sleep 0.1; done
	"$(command -v slurmctld || echo /usr/sbin/slurmctld)" -D -i >>"$S/slurmctld.out" 2>&1 &
	SLURM_PIDS+=($!)
	"$(command -v slurmd || echo /usr/sbin/slurmd)" -D -N localhost >>"$S/slurmd.out" 2>&1 &
	SLURM_PIDS+=($!)
	# ready when the node is idle
	for _ in $(seq 1 200); do
		sinfo -h -o %t 2>/dev/null | grep -q '^idle' && return 0
		sleep 0.1
	done
	echo "# Slurm did not come up:"
	tail -5 "$S"/*.log "$S"/*.out 2>/dev/null | sed 's/^/#   /'
	return 1
}

# Cancels every job, shuts the daemons down and waits for them.
slurm_stop() {
	[ ${#SLURM_PIDS[@]} = 0 ] && return 0
	scancel --full --quiet --user=root 2>/dev/null
	for _ in $(seq 1 100); do
		[ -z "$(squeue -h 2>/dev/null)" ] && break
		sleep 0.1
	done
	scontrol shutdown >/dev/null 2>&1
	local pid
	for pid in "${SLURM_PIDS[@]:1}"; do
		for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null
	done
	kill -TERM "${SLURM_PIDS[0]}" 2>/dev/null
	wait "${SLURM_PIDS[@]}" 2>/dev/null
	SLURM_PIDS=()
}

# Prints the Slurm logs (for a failed test).
slurm_logs() {
	tail -n 20 "$T"/slurm/*.log 2>/dev/null | sed 's/^/#   /'
}

# How jobs run: run.pl on this machine (default). For a cluster, comment these and uncomment one
# of the blocks below (slurm.pl and queue.pl take the same arguments as run.pl).
export train_cmd="run.pl"
export decode_cmd="run.pl"
export cuda_cmd="run.pl"
# Each job uses the cores it is given: 1 CPU thread unless --num-threads says more (as Kaldi's
# run.pl books one slot per job); e.g. cuda_cmd="run.pl --num-threads 4" for a CPU training
# alone on a 4-core machine (docs/performance.md, "CPU threads").

# Slurm (options become sbatch options through conf/slurm.conf when it exists, Kaldi's format,
# else the default: --mem M -> --mem-per-cpu M, --num-threads N -> --cpus-per-task N,
# --gpu N -> -p gpu --gres=gpu:N, --gpu 0 -> none; README.md "Clusters"):
# export train_cmd="slurm.pl --mem 4G"
# export decode_cmd="slurm.pl --mem 4G"
# export cuda_cmd="slurm.pl --gpu 1"

# Grid Engine:
# export train_cmd="queue.pl --mem 4G"
# export decode_cmd="queue.pl --mem 4G"
# export cuda_cmd="queue.pl --gpu 1"

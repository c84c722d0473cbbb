# `make demo` and `make test` create .venv when it is missing, then run.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
DEMO   := demo-out

.PHONY: demo demo-rgcn test test-fast test-gpu test-cluster bench bench-page clean

$(STAMP): pyproject.toml setup.py $(wildcard src/distgraph/native/*.c)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/distgraph generate sbm --num_nodes 100000 --num_edges 1000000 --feat_dim 64 --seed 0 --out $(DEMO)/sbm.npz
	$(VENV)/bin/distgraph partition --input $(DEMO)/sbm.npz --graph_name sbm --num_parts 2 \
		--part_method metis --balance_train --balance_edges --out $(DEMO)/parts
	$(PY) examples/graphsage/loopback_ip_config.py 2 $(DEMO)/ip_config.txt
	$(VENV)/bin/distgraph launch --workspace $(CURDIR) --num_trainers 1 --num_servers 1 --num_samplers 0 \
		--part_config $(DEMO)/parts/sbm.json --ip_config $(DEMO)/ip_config.txt \
		"$(CURDIR)/$(PY) examples/graphsage/train_dist.py --graph_name sbm --num_epochs 4 --lr 0.01 --batch_size 500"

# RGCN on a generated ogbn-mag-shaped graph (every relation reversed), 2 machines on this host.
demo-rgcn: $(STAMP)
	$(VENV)/bin/distgraph generate mag --num_papers 20000 --num_authors 15000 --seed 0 --out $(DEMO)/mag.npz
	$(VENV)/bin/distgraph partition --input $(DEMO)/mag.npz --graph_name mag --num_parts 2 --add_reverse_edges \
		--part_method metis --balance_train --balance_edges --out $(DEMO)/mag_parts
	$(PY) examples/graphsage/loopback_ip_config.py 2 $(DEMO)/ip_config_mag.txt
	$(VENV)/bin/distgraph launch --workspace $(CURDIR) --num_trainers 1 --num_servers 1 --num_samplers 1 \
		--part_config $(DEMO)/mag_parts/mag.json --ip_config $(DEMO)/ip_config_mag.txt \
		"$(CURDIR)/$(PY) examples/rgcn/entity_classify_dist.py --graph-name mag --dataset mag --fanout 10,10 \
		--batch-size 512 --n-hidden 64 --lr 0.01 --eval-batch-size 1000 --dropout 0.5 --use-self-loop --n-bases 2 \
		--n-epochs 3 --layer-norm --sparse-embedding --sparse-lr 0.06"

# two pytest processes side by side (tests/shards.py), the first with these files: about half the time
FIRST      := $(addprefix tests/runtime/,test_dgl_scripts.py test_examples.py test_faults.py test_chaos.py \
	test_results.py test_server_failures.py test_launch.py)
FIRST_FAST := tests/kge

test: $(STAMP)
	OMP_NUM_THREADS=1 $(PY) tests/shards.py --first $(FIRST) -- -q tests --ignore=tests/cluster

# the inner loop: no server, launcher or multi-process job (tests marked `multiprocess`), under a minute
test-fast: $(STAMP)
	OMP_NUM_THREADS=1 $(PY) tests/shards.py --first $(FIRST_FAST) -- -q tests --ignore=tests/cluster \
		--ignore=tests/runtime -m "not multiprocess"

# the tests that need a CUDA device (marked `gpu`); one line, and nothing run, where torch finds none
test-gpu: $(STAMP)
	@if $(PY) -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then \
		OMP_NUM_THREADS=1 $(PY) -m pytest -q -rs -m gpu tests --ignore=tests/cluster; \
	else echo "test-gpu: skipped, torch finds no CUDA device on this machine"; fi

# 3 test hosts on this machine (network and mount namespaces, an sshd and a slurmd each): needs root.
test-cluster: $(STAMP)
	@test -x /usr/sbin/sshd -a -x /usr/sbin/nft -a -x /usr/sbin/slurmd -a -x /usr/sbin/slurmctld || test "$$(id -u)" != 0 || \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q openssh-server nftables slurmd slurmctld slurm-client > /dev/null
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -rs tests/cluster

# the benchmarks (long; not part of `make test`): bench-out/<name>.json and plots, then
# docs/benchmarks.md from them; BENCH="partition kvstore" runs only those
bench: $(STAMP)
	$(PY) benchmarks/run.py $(BENCH)
	$(PY) benchmarks/page.py

# docs/benchmarks.md and the plots from the recorded figures (benchmarks/results/*.json) alone
bench-page: $(STAMP)
	$(PY) benchmarks/page.py

clean:
	rm -rf $(DEMO)

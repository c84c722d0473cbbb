# `make demo` and `make test` create .venv when it is missing, then run.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
DEMO   := demo-out

.PHONY: demo test test-cluster clean

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

test: $(STAMP)
	OMP_NUM_THREADS=1 $(PY) -m pytest -q tests --ignore=tests/cluster

# 3 test hosts on this machine (network and mount namespaces, an sshd each): needs root.
test-cluster: $(STAMP)
	@test -x /usr/sbin/sshd || test "$$(id -u)" != 0 || apt-get install -y -q openssh-server > /dev/null
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -rs tests/cluster

clean:
	rm -rf $(DEMO)

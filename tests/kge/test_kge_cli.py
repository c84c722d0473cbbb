"""`distgraph kge train|eval` flags: every dglke_train flag parses, defaults are DGL-KE's, errors are clear."""

import argparse
import re

import pytest

from distgraph.cli import kge as cli
from distgraph.cli import main as cli_main
from distgraph.errors import InputError
from distgraph.kge import EvalConfig, TrainConfig
from distgraph.kge.config import inert_flags


def _parser():
    p = argparse.ArgumentParser(prog="distgraph")
    cli.register(p.add_subparsers(dest="command", required=True))
    return p


def test_every_train_flag_parses():
    argv = ["kge", "train", "--model_name", "RotatE", "--dataset", "mykg", "--data_path", "/d",
            "--format", "raw_udd_htr", "--data_files", "tr.tsv", "va.tsv", "te.tsv", "--delimiter", "\\t",
            "--hidden_dim", "64", "--gamma", "9.5", "--lr", "0.2", "--batch_size", "512",
            "--neg_sample_size", "64", "--neg_deg_sample", "--neg_adversarial_sampling",
            "--adversarial_temperature", "0.5", "--regularization_coef", "1e-7", "--regularization_norm", "2",
            "--double_ent", "--double_rel", "--max_step", "123", "--log_interval", "7", "--valid", "--test",
            "--eval_interval", "50", "--batch_size_eval", "32", "--num_proc", "3", "--num_thread", "2",
            "--save_path", "/s", "--no_save_emb", "--seed", "9"]
    args = _parser().parse_args(argv)
    assert args.func is cli.train_command
    assert cli.train_config(args) == TrainConfig(
        model_name="RotatE", dataset="mykg", data_path="/d", format="raw_udd_htr",
        data_files=["tr.tsv", "va.tsv", "te.tsv"], delimiter="\t", save_path="/s", no_save_emb=True, max_step=123,
        batch_size=512, batch_size_eval=32, neg_sample_size=64, neg_deg_sample=True, log_interval=7,
        eval_interval=50, valid=True, test=True, num_proc=3, num_thread=2, hidden_dim=64, lr=0.2, gamma=9.5,
        double_ent=True, double_rel=True, neg_adversarial_sampling=True, adversarial_temperature=0.5,
        regularization_coef=1e-7, regularization_norm=2, seed=9)


def test_dglke_short_flags():
    args = _parser().parse_args(["kge", "train", "-adv", "-a", "2", "-g", "3", "-de", "-dr", "-rc", "1e-9",
                                 "-rn", "1", "-log", "5"])
    cfg = cli.train_config(args)
    assert (cfg.neg_adversarial_sampling, cfg.adversarial_temperature, cfg.gamma) == (True, 2.0, 3.0)
    assert (cfg.double_ent, cfg.double_rel, cfg.regularization_coef) == (True, True, 1e-9)
    assert (cfg.regularization_norm, cfg.log_interval) == (1, 5)


def test_defaults_are_dglke_defaults():
    cfg = cli.train_config(_parser().parse_args(["kge", "train"]))
    assert cfg == TrainConfig()
    assert (cfg.model_name, cfg.dataset, cfg.data_path, cfg.format) == ("TransE", "FB15k", "data", "built_in")
    assert (cfg.hidden_dim, cfg.gamma, cfg.lr, cfg.batch_size, cfg.neg_sample_size) == (400, 12.0, 0.01, 1024, 256)
    assert (cfg.max_step, cfg.log_interval, cfg.eval_interval, cfg.batch_size_eval) == (80000, 1000, 10000, 8)
    assert (cfg.regularization_coef, cfg.regularization_norm, cfg.adversarial_temperature) == (2e-6, 3, 1.0)
    assert (cfg.save_path, cfg.num_proc, cfg.num_thread, cfg.delimiter) == ("ckpts", 1, 1, "\t")


def test_eval_flags():
    args = _parser().parse_args(["kge", "eval", "--model_path", "m", "--data_path", "d", "--dataset", "x",
                                 "--format", "udd_hrt", "--data_files", "e", "r", "t", "--delimiter", "comma",
                                 "--batch_size_eval", "4", "--num_proc", "2", "--num_thread", "3"])
    assert args.func is cli.eval_command
    assert cli.eval_config(args) == EvalConfig("m", "d", "x", "udd_hrt", ["e", "r", "t"], ",", 4, 2, 3)
    assert cli.eval_config(_parser().parse_args(["kge", "eval", "--model_path", "m"])) == EvalConfig("m")


def test_unknown_model_is_rejected_by_the_parser(capsys):
    with pytest.raises(SystemExit):
        _parser().parse_args(["kge", "train", "--model_name", "TransQ"])
    assert "invalid choice: 'TransQ'" in capsys.readouterr().err


def test_missing_data_is_an_input_error_naming_the_folder(tmp_path):
    args = _parser().parse_args(["kge", "train", "--dataset", "wn18rr", "--data_path", str(tmp_path)])
    with pytest.raises(InputError, match=f"{tmp_path / 'wn18rr'}"):
        args.func(args)


def test_main_prints_input_errors_without_traceback(tmp_path, capsys):
    if "kge" not in cli_main.SUBCOMMANDS:
        pytest.skip("distgraph.cli.main does not register the kge sub-command yet")
    code = cli_main.main(["kge", "train", "--format", "raw_udd_hrt", "--data_path", str(tmp_path),
                          "--data_files", "missing.txt", "--dataset", "x"])
    err = capsys.readouterr().err
    assert code == 2 and "missing.txt does not exist" in err and "Traceback" not in err


def test_every_flag_dglke_train_and_dglke_eval_take_is_accepted():
    cfg = cli.train_config(_parser().parse_args([
        "kge", "train", "--neg_sample_size_eval", "100", "--eval_percent", "0.5", "--no_eval_filter",
        "--neg_deg_sample_eval", "--force_sync_interval", "1000", "--rel_part", "--async_update",
        "--has_edge_importance"]))
    assert (cfg.neg_sample_size_eval, cfg.eval_percent, cfg.no_eval_filter, cfg.neg_deg_sample_eval) == (
        100, 0.5, True, True)
    assert (cfg.force_sync_interval, cfg.rel_part, cfg.async_update, cfg.has_edge_importance) == (1000, True, True,
                                                                                                  True)
    cfg.check()
    losses = cli.train_config(_parser().parse_args(["kge", "train", "--loss_genre", "Hinge", "-pw", "-m", "2.5",
                                                    "--gpu", "-1", "--mix_cpu_gpu"]))
    assert (losses.loss_genre, losses.pairwise, losses.margin, losses.gpu, losses.mix_cpu_gpu) == (
        "Hinge", True, 2.5, [-1], True)
    losses.check()
    assert cli.train_config(_parser().parse_args(["kge", "train", "--pairwise", "--loss_genre", "Logistic",
                                                  "--margin", "3"])).check().margin == 3.0
    assert _parser().parse_args(["kge", "partition", "--dataset", "FB15k", "--num-parts", "3"]).num_parts == 3
    ev = cli.eval_config(_parser().parse_args([
        "kge", "eval", "--model_path", "m", "--model_name", "TransE_l2", "--hidden_dim", "400", "--gamma", "19.9",
        "-de", "-dr", "--neg_sample_size_eval", "50", "--eval_percent", "0.1", "--no_eval_filter"]))
    assert (ev.model_name, ev.hidden_dim, ev.gamma, ev.double_ent, ev.double_rel) == ("TransE_l2", 400, 19.9, True,
                                                                                      True)


@pytest.mark.parametrize("argv, message", [
    (["--gpu", "-1", "1", "--mix_cpu_gpu"], "--gpu -1 1 mixes -1 \\(the CPU\\) with GPU ids"),
    (["--gpu", "0", "0"], "--gpu 0 0 names a GPU twice"),
    (["--pairwise"], "--pairwise compares .* with the Hinge or Logistic loss, not Logsigmoid"),
    (["--pairwise", "--loss_genre", "BCE"], "add --loss_genre Hinge or --loss_genre Logistic"),
    (["--pairwise", "--loss_genre", "Hinge", "-adv"], "--pairwise and -adv .* exclude each other"),
    (["--model_name", "RotatE"], "RotatE needs entity dim = 2 x relation dim"),
    (["--model_name", "ComplEx", "--hidden_dim", "7"], "ComplEx splits embeddings in halves"),
    (["--eval_percent", "0"], "--eval_percent must be a fraction in"),
    (["--neg_sample_size_eval", "0"], "--neg_sample_size_eval must be positive"),
    (["--neg_deg_sample_eval"], "give --neg_sample_size_eval too"),
    (["--neg_deg_sample_eval", "--neg_sample_size_eval", "5"], "add --no_eval_filter"),
    (["--force_sync_interval", "0"], "--force_sync_interval must be a positive number"),
])
def test_flags_without_a_meaning_here_are_one_clear_error(argv, message):
    cfg = cli.train_config(_parser().parse_args(["kge", "train", *argv]))
    with pytest.raises(InputError, match=message):
        cfg.check()


def test_dist_train_and_partition_take_dglke_flags():
    args = _parser().parse_args(["kge", "dist-train", "--path", "/w", "--ip_config", "/w/ip.txt",
                                 "--num_client_proc", "16", "--model_name", "TransE_l2", "--dataset", "FB15k",
                                 "--data_path", "/w", "--hidden_dim", "400", "--gamma", "19.9", "--lr", "0.25",
                                 "--batch_size", "1000", "--neg_sample_size", "200", "--max_step", "500",
                                 "--log_interval", "100", "--batch_size_eval", "16", "--test", "-adv",
                                 "--regularization_coef", "1.00E-09", "--num_thread", "1", "--ssh_key", "/k",
                                 "--no_save_emb"])
    assert args.func is cli.dist_train_command and args.num_client_proc == 16 and args.ssh_key == "/k"
    assert cli.train_config(args).regularization_coef == 1e-9
    part = _parser().parse_args(["kge", "partition", "--dataset", "FB15k", "-k", "4", "--data_path", "/w"])
    assert part.func is cli.partition_command and part.num_parts == 4 and part.part_method is None  # chosen by size


def test_dist_train_says_what_its_flags_mean_before_anything_starts(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ip.txt").write_text("127.0.0.1 30050\n")
    base = ["kge", "dist-train", "--path", str(tmp_path / "ws"), "--dataset", "FB15k", "--data_path", "d"]
    cases = [([*base, "--ip_config", "ip.txt", "--num_proc", "4"], "pass --num_client_proc 4 instead"),
             ([*base, "--ip_config", "ip.txt", "--ssh_key", "nokey"], rf"--ssh_key nokey does not exist \(looked for "
                                                                      rf"{tmp_path}/nokey\)"),
             ([*base, "--ip_config", "ws/ip.txt"], rf"--ip_config ws/ip.txt does not exist \(looked for "
                                                   rf"{tmp_path}/ws/ip.txt: a relative path starts where")]
    for argv, message in cases:
        assert cli_main.main(argv) == 2
        err = capsys.readouterr().err
        assert re.search(message, err) and len(err.strip().splitlines()) == 1, err


def test_flags_that_change_nothing_here_are_said_at_the_start():
    cfg = TrainConfig(async_update=True, mix_cpu_gpu=True, gpu=[-1], rel_part=True, force_sync_interval=5)
    lines = inert_flags(cfg, processes=1)
    assert [line.split()[1] for line in lines] == ["--mix_cpu_gpu", "--gpu", "--rel_part", "--force_sync_interval"]
    assert [line.split()[1] for line in inert_flags(cfg, processes=4)] == ["--mix_cpu_gpu", "--gpu"]
    assert inert_flags(TrainConfig(), processes=1) == []

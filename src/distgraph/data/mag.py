"""A heterogeneous graph shaped like ogbn-mag: papers, authors, institutions, fields of study."""

from __future__ import annotations

import numpy as np
import torch

from ..errors import InputError
from ..graph import Graph
from .sbm import CommunitySampler, class_features, power_law_weights, split_masks


def generate_mag(
    num_papers: int = 20_000,
    num_authors: int = 15_000,
    num_institutions: int = 500,
    num_fields: int = 1_000,
    num_classes: int = 16,
    feat_dim: int = 64,
    cites_per_paper: int = 8,
    authors_per_paper: int = 3,
    fields_per_paper: int = 4,
    p_in: float = 0.8,
    feat_signal: float = 0.15,
    seed: int = 0,
) -> Graph:
    """Relations writes (author→paper), cites (paper→paper), affiliated_with
    (author→institution) and has_topic (paper→field_of_study). Papers carry `feat`,
    `label` (a venue-like class) and masks; authors and fields lean to one class, so the
    label is learnable through the graph."""
    counts = dict(num_papers=num_papers, num_authors=num_authors, num_institutions=num_institutions,
                  num_fields=num_fields, num_classes=num_classes)
    for name, value in counts.items():
        if value < 1:
            raise InputError(f"generate_mag needs {name} >= 1, got {value}")
    for name, value in dict(feat_dim=feat_dim, cites_per_paper=cites_per_paper, authors_per_paper=authors_per_paper,
                            fields_per_paper=fields_per_paper).items():
        if value < 0:
            raise InputError(f"generate_mag needs {name} >= 0, got {value}")
    if not 0 <= p_in <= 1:
        raise InputError(f"generate_mag needs 0 <= p_in <= 1, got {p_in}")
    rng = np.random.default_rng(seed)
    paper_cls = rng.integers(0, num_classes, num_papers)
    author_cls = rng.integers(0, num_classes, num_authors)
    field_cls = rng.integers(0, num_classes, num_fields)
    papers = CommunitySampler(rng, paper_cls, power_law_weights(rng, num_papers, 2.5), num_classes)
    authors = CommunitySampler(rng, author_cls, power_law_weights(rng, num_authors, 2.5), num_classes)
    fields = CommunitySampler(rng, field_cls, power_law_weights(rng, num_fields, 2.2), num_classes)

    citing = np.repeat(np.arange(num_papers), cites_per_paper)
    cited = papers.draw(paper_cls[citing], p_in)
    keep = citing != cited
    written = np.repeat(np.arange(num_papers), authors_per_paper)
    writer = authors.draw(paper_cls[written], p_in)
    topical = np.repeat(np.arange(num_papers), fields_per_paper)
    topic = fields.draw(paper_cls[topical], p_in)
    edges = {
        ("author", "writes", "paper"): (writer, written),
        ("paper", "cites", "paper"): (citing[keep], cited[keep]),
        ("author", "affiliated_with", "institution"): (np.arange(num_authors), rng.integers(0, num_institutions, num_authors)),
        ("paper", "has_topic", "field_of_study"): (topical, topic),
    }
    ndata = {"paper": {
        "feat": class_features(rng, paper_cls, num_classes, feat_dim, feat_signal),
        "label": torch.from_numpy(paper_cls),
        **split_masks(rng, num_papers, 0.6, 0.2, 0.2),
    }}
    counts = {"paper": num_papers, "author": num_authors, "institution": num_institutions, "field_of_study": num_fields}
    return Graph.from_hetero({c: (torch.from_numpy(s), torch.from_numpy(d)) for c, (s, d) in edges.items()}, counts, ndata)

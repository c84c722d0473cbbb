"""A heterogeneous graph shaped like ogbn-mag: papers, authors, institutions, fields of study,
whose labels need the relations and the featureless types' learnt embeddings.

As in ogbn-mag, a paper's label is its venue and its features describe its topic. Every
venue has a home topic, which a paper of that venue is about with probability `topic_share`
(any topic otherwise), so features alone predict the venue little better than that share.
Citations and fields of study follow the topic too. Authors publish mostly at one venue and
institutions gather the authors of one venue, so the venue is carried by *who* wrote a paper:
a model finds it through the authors' (and institutions') embeddings, learnt from the
training papers they wrote, which have no features of their own.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from ..errors import InputError
from ..tensor_graph import Graph
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
    p_in: float = 0.6,
    feat_signal: float = 0.5,
    topic_share: float = 0.2,
    seed: int = 0,
) -> Graph:
    """Relations writes (author→paper), cites (paper→paper), affiliated_with
    (author→institution) and has_topic (paper→field_of_study). Papers carry `feat` (their
    topic, `feat_signal` strong), `label` (their venue, one of `num_classes`) and masks; a
    paper's authors are of its venue with probability `p_in`, its citations and fields of its
    topic with probability `p_in`, an author's institution of the author's venue with
    probability `p_in`. Every node has at least one edge of each relation its type takes part
    in (each relation with edges at all), whichever end it is."""
    counts = dict(num_papers=num_papers, num_authors=num_authors, num_institutions=num_institutions,
                  num_fields=num_fields, num_classes=num_classes)
    for name, value in counts.items():
        if value < 1:
            raise InputError(f"generate_mag needs {name} >= 1, got {value}")
    for name, value in dict(feat_dim=feat_dim, cites_per_paper=cites_per_paper, authors_per_paper=authors_per_paper,
                            fields_per_paper=fields_per_paper).items():
        if value < 0:
            raise InputError(f"generate_mag needs {name} >= 0, got {value}")
    for name, value in dict(p_in=p_in, topic_share=topic_share).items():
        if not 0 <= value <= 1:
            raise InputError(f"generate_mag needs 0 <= {name} <= 1, got {value}")
    rng = np.random.default_rng(seed)
    venue = rng.integers(0, num_classes, num_papers)
    topic = np.where(rng.random(num_papers) < topic_share, venue, rng.integers(0, num_classes, num_papers))
    author_venue = rng.integers(0, num_classes, num_authors)
    inst_venue = rng.integers(0, num_classes, num_institutions)
    field_topic = rng.integers(0, num_classes, num_fields)
    papers = CommunitySampler(rng, topic, power_law_weights(rng, num_papers, 2.5), num_classes)
    authors = CommunitySampler(rng, author_venue, power_law_weights(rng, num_authors, 2.5), num_classes)
    institutions = CommunitySampler(rng, inst_venue, power_law_weights(rng, num_institutions, 2.2), num_classes)
    fields = CommunitySampler(rng, field_topic, power_law_weights(rng, num_fields, 2.2), num_classes)

    by_venue = CommunitySampler(rng, venue, np.ones(num_papers), num_classes)
    citing = np.repeat(np.arange(num_papers), cites_per_paper)
    cited = papers.draw(topic[citing], p_in)
    written = np.repeat(np.arange(num_papers), authors_per_paper)
    topical = np.repeat(np.arange(num_papers), fields_per_paper)
    # every node gets at least one edge of each relation it can have, either way, so that no node
    # lacks in-edges of a relation once the relations are reversed too (ogbn-mag's authors,
    # institutions and fields all have some; DGL's GraphConv refuses nodes without in-edges)
    edges = {
        ("author", "writes", "paper"): _covered(
            authors.draw(venue[written], p_in), written, num_authors, num_papers,
            lambda a: by_venue.draw(author_venue[a], p_in), lambda p: authors.draw(venue[p], p_in)),
        ("paper", "cites", "paper"): _covered(
            citing, cited, num_papers, num_papers, lambda q: papers.draw(topic[q], p_in),
            lambda p: papers.draw(topic[p], p_in), no_loops=True),
        ("author", "affiliated_with", "institution"): _covered(
            np.arange(num_authors), institutions.draw(author_venue, p_in), num_authors, num_institutions,
            lambda a: institutions.draw(author_venue[a], p_in), lambda i: authors.draw(inst_venue[i], p_in)),
        ("paper", "has_topic", "field_of_study"): _covered(
            topical, fields.draw(topic[topical], p_in), num_papers, num_fields,
            lambda p: fields.draw(topic[p], p_in), lambda f: papers.draw(field_topic[f], p_in)),
    }
    ndata = {"paper": {
        "feat": class_features(rng, topic, num_classes, feat_dim, feat_signal),
        "label": torch.from_numpy(venue),
        **split_masks(rng, num_papers, 0.6, 0.2, 0.2),
    }}
    counts = {"paper": num_papers, "author": num_authors, "institution": num_institutions, "field_of_study": num_fields}
    return Graph.from_hetero({c: (torch.from_numpy(s), torch.from_numpy(d)) for c, (s, d) in edges.items()}, counts, ndata)


def _covered(src: np.ndarray, dst: np.ndarray, num_src: int, num_dst: int, dst_for: Callable, src_for: Callable,
             no_loops: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The edges (src, dst), without self-loops if `no_loops`, plus one edge for each source
    that has none (to `dst_for(those sources)`) and then one for each destination that has none
    (from `src_for(those destinations)`); a relation without edges stays without."""
    if no_loops:
        keep = src != dst
        src, dst = src[keep], dst[keep]
    if src.size == 0:
        return src, dst
    for side in (0, 1):
        ends = (src, dst)[side]
        lonely = np.flatnonzero(np.bincount(ends, minlength=(num_src, num_dst)[side]) == 0)
        other = (dst_for if side == 0 else src_for)(lonely)
        if no_loops:  # a drawn partner that is the node itself becomes the next node
            other = np.where(other == lonely, (lonely + 1) % (num_dst if side == 0 else num_src), other)
        new = (lonely, other) if side == 0 else (other, lonely)
        src, dst = np.concatenate([src, new[0]]), np.concatenate([dst, new[1]])
    return src, dst

"""What `distgraph generate kg` makes by default, without numpy: Freebase's sizes, the formats
written and the share of triples held out, so the command line shows them at no import cost."""

FREEBASE = {"num_entities": 86_054_151, "num_relations": 14_824, "num_triples": 338_586_276}
FORMATS = ("freebase", "udd_hrt")
EVAL_SHARE, EVAL_MAX = 0.01, 50_000  # default valid and test sizes: min(1 % of the training triples, 50,000)

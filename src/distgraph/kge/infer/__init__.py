"""DGL-KE's inference commands on a saved model or an embedding table: `kge predict`
(`predict`) and `kge emb-sim` (`emb_sim`), their settings checked before anything loads
(`config`), and what both do alike with a query's lists, best scores and result file (`query`)."""

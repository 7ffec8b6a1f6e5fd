"""The served store: a FastAPI ingress on Ray Serve in front of the shard actors, with tenant API keys.

``palimpsest serve --store DIR`` (:mod:`palimpsest.server.run`) opens the
store, then deploys :mod:`palimpsest.server.app`; keys live in the store's
key log (:mod:`palimpsest.server.keys`).
"""

"""The operations declared once (:mod:`palimpsest.operation`): one user's reads, and its items.

Each declaration below is the whole operation: its HTTP route, ``RemoteMemory`` method, MCP tool and CLI
subcommand are generated from it (:mod:`palimpsest.server.routes_generated`, :mod:`palimpsest.client`,
:mod:`palimpsest.server.mcp_tools`, :mod:`palimpsest.cli_operations`), and so is the ``Memory`` method of one
answered by a shard reader (:mod:`palimpsest.memory_operations`). Adding an operation is one declaration here
and its handler; ``tests/unit/test_operations.py`` walks every exposure of every operation.

Routes still written by hand, and why:

- not operations of the memory: ``/v1/keys`` (the API keys, ``routes_keys``), ``/v1/chat/completions`` and
  ``/v1/responses`` (the OpenAI-compatible proxy, ``routes_proxy``), ``/v1/audit/sql``, ``/v1/audit/events`` and
  ``/v1/audit/export`` (the read-only SQL audit over the log's rows and its Parquet file, ``routes_audit``),
  ``/v1/admin/reembed`` (a background job's start and progress, ``routes_reembed``), ``/v1/whoami`` (the key
  itself), ``/v1/policies`` (the store's settings, no shard asked), ``/health`` (the replica's liveness and
  admission gates) and the inspector's static files (``ui``);
- operations whose shape the declarations do not express yet: ``POST /v1/users/{user_id}/messages`` (a batch
  of message records, which ``RemoteMemory.add_messages`` validates whole and sends in batches per user with a
  progress bar; MCP's ``add_memory`` keeps MemoryOS's arguments), ``/v1/users/{user_id}/tools/{name}`` (the
  memory-graph tool calls, whose arguments follow the LLM tool schemas of :mod:`projections.rules.tool_schema`),
  ``/v1/users`` (the replica's known users), ``/v1/events`` (the log's envelopes under audit filters) and
  ``/v1/counterfactual`` (a policy and a list of queries as objects).

Subcommands written by hand over a declared method: ``palimpsest consolidate`` (it also sets the tasks in flight,
a setting of the process that runs them), ``palimpsest forget`` (it asks to confirm, and refuses a plaintext store
before starting anything), ``palimpsest graph`` (it writes files) and ``palimpsest replay`` (it also runs a
counterfactual). Subcommands of what is not declared: ``ingest`` (the messages route's batches, read from a file),
``tool``/``tools`` (the tool calls' route), ``events``, ``sql`` and ``export`` (the audit routes), ``policies``,
``reembed``, ``keys``, ``serve``, ``mcp``, ``backup``, ``restore``, ``encrypt`` and ``demo`` (the store's files,
services and setup, not one user's memory), and ``molt`` (one subcommand for the Molt controller, its first argument
picking a run over many users, a user's history or the revert of a policy change; Python only, no route).
"""

from __future__ import annotations

from datetime import datetime

from palimpsest.operation import ADMIN, READ, STORE, WRITE, Cli, Http, Operation, Param, ShardReader, registry

OPERATIONS: dict[str, Operation] = registry(
    # -- one user's recall ------------------------------------------------------------------------------------------
    Operation(
        "search", READ,
        (Param("query", str, help="what to look for, in natural language", ge=1, positional=True, flag="query"),
         Param("k", int, 10, "how many memories (default 10)", ge=1, le=1000, positional=True, flag="-k"),
         Param("now", datetime | None, None, "when the question is asked (default: now)", flag="--at"),
         Param("scope", str, "active", "active memories (default), the archive, or all",
               choices=("active", "archive", "all"))),
        doc="The ``k`` best memories of one user for ``query``, each with its score breakdown, the score's terms "
            "(computed by the shard with the fusion that ranked it) and provenance.",
        http=Http("POST", "/search", "The k best memories for a query, with score breakdown, its terms and "
                                     "provenance", answer="hits", decode="palimpsest.client:hits_of"),
        cli=Cli("search", "hybrid search of one user's memory", render="palimpsest.cli_search:print_search",
                switches=(("-v", "--verbose", "also each hit's ids, source events, score terms and whole score "
                                              "breakdown"),)),
    ),
    Operation(
        "build_context", READ,
        (Param("query", str, help="the user's current message or question", ge=1, positional=True, flag="query"),
         Param("token_budget", int, 1000, "at most this many tokens of context (default 1000)", ge=1, le=200_000,
               positional=True, flag="--budget"),
         Param("now", datetime | None, None, "when the question is asked (default: now)", flag="--at")),
        doc="Prompt-ready memory text for ``query``, at most ``token_budget`` tokens, provenance per line.",
        http=Http("POST", "/context", "Prompt-ready memory text within a token budget, provenance per line",
                  name="context", decode="palimpsest.client:context_of"),
        mcp="Prompt-ready memory for a query: the relevant memories, notes and profile as text within a token "
            "budget, each line with its provenance. Use it to fill the memory part of a system prompt.",
        cli=Cli("context", "prompt-ready context within a token budget", render="palimpsest.cli_search:print_context"),
    ),
    # -- the learning loop: what the agent did with what it was given ------------------------------------------------
    Operation(
        "record_reply", WRITE,
        (Param("reply", str, help="the agent's reply, verbatim", ge=1, positional=True, flag="reply"),
         Param("memory_ids", list[str], (), "the ids of the retrieved notes and turns the agent was given", le=10_000,
               positional=True, flag="memory_ids", python="retrieved"),
         Param("query", str, "", "the question the reply answered")),
        doc="Tell the memory what the agent replied: the retrieved notes and turns it drew on are reinforced; the "
            "ids judged used, with their scores. ``retrieved`` is the context the agent was given, or its ids.",
        new_user=False,
        http=Http("POST", "/reply", "Tell the memory what the agent replied; the memories it used are reinforced",
                  answer="used", name="reply"),
        cli=Cli("reply", "record the agent's reply: retrieved memories it drew on are reinforced",
                render="palimpsest.cli_notes:print_reply"),
    ),
    Operation(
        "judge_feedback", WRITE,
        (Param("user_input", str, help="the user's turn", ge=1, positional=True, flag="--input"),
         Param("agent_response", str, help="the agent's reply it reacts to", ge=1, positional=True, flag="--reply"),
         Param("context_window", list[str], (), "the earlier turns, oldest first", le=1000, flag="--context"),
         Param("memory_ids", list[str], (), "the memory and note ids the reply's context held", le=10_000,
               flag="--memory-id", python="retrieved"),
         Param("now", datetime | None, None, "when the user reacted (default: now)", flag="--at"),
         Param("query", str | None, None, "the question the reply answered: a penalty then applies to that topic "
                                          "only (default: the context's)", le=20_000)),
        doc="The Feedback Judge on the user's turn answering ``agent_response``; records the signal and returns "
            "the verdict with the adjustments the dispatcher made from it. ``retrieved`` is the context the judged "
            "reply was given, or its ids.",
        new_user=False,
        http=Http("POST", "/feedback/judge", "Judge the user's turn that answers an agent reply; records the signal",
                  name="judge"),
        cli=Cli("feedback judge", "judge the user's turn that answers an agent reply; records the signal",
                render="palimpsest.cli_feedback:print_verdict"),
    ),
    Operation(
        "review_notes", WRITE,
        (Param("now", datetime | None, None, "the review's time (default: now)", positional=True, flag="--at"),),
        doc="Run the note reviewer: promotion at importance ≥ 2.5, retraction below 0.5; its decisions are events. "
            "Of one user, or tenant-wide (every tenant's users when ``tenant`` is left out too).",
        user="optional", new_user=False,
        http=Http("POST", "/notes/review", "Run the note reviewer (promotion and retraction, as events)",
                  answer="decisions", tenant_summary="Run the note reviewer for your tenant (or one user of it)",
                  name="review_notes"),
        cli=Cli("notes review", "promotion / retraction review of notes whose importance crossed a threshold",
                render="palimpsest.cli_notes:print_reviews"),
    ),
    Operation(
        "forget", WRITE,
        doc="Erase one user of one tenant for good: a ``user_forgotten`` event, the user's data keys destroyed (its "
            "events can never be read again), its projections, vectors and snapshot removed; the outcome.",
        new_user=False, other_tenant=True,
        http=Http("POST", "/forget", "Erase the user for good: data key destroyed, projections, vectors, snapshot "
                                     "removed"),
    ),
    # -- one user's notes, episodes, retention, profile, tiers, archive ------------------------------------------------
    Operation(
        "notes", READ,
        (Param("at", datetime | None, None, "the notes valid at this time (ISO with offset)"),
         Param("include_inactive", bool, False, "every version, superseded and retracted included", flag="--all")),
        http=Http("GET", "/notes", "The user's notes (active, at a time, or every version)", answer="notes"),
        cli=Cli("notes list", "one user's notes, grouped by category, with their sources",
                render="palimpsest.cli_notes:print_notes"),
    ),
    Operation(
        "note_history", READ,
        (Param("note_id", str, help="the id of any version of the note", positional=True, flag="note_id"),),
        user="optional",
        http=Http("GET", "/notes/{note_id}", "A note's version chain with each version's sources",
                  tenant_summary="A note of your tenant by id: its version chain and whose it is"),
        cli=Cli("note-history", "the supersession chain of a note, every version with its sources",
                render="palimpsest.cli_notes:print_history"),
    ),
    Operation(
        "episodes", READ,
        (Param("query", str | None, None, "rank the episodes for this query instead of listing them all",
               positional=True, flag="query"),
         Param("k", int, 5, "with a query: how many episodes (default 5)", ge=1, le=1000, flag="-k")),
        http=Http("GET", "/episodes", "The user's episodes, or the k that match a query best", answer="episodes"),
        cli=Cli("episodes", "one user's episodes with their turns and summaries (or those matching a query)",
                render="palimpsest.cli_memory:print_episodes", counted=("k", "episodes")),
    ),
    Operation(
        "retention", READ,
        (Param("now", datetime | None, None, "ISO time with offset (default: now)", positional=True, flag="--at"),),
        http=Http("GET", "/retention", "Each memory's retention at a time, with why", answer="memories"),
        cli=Cli("retention", "forgetting curve of one user's memories at a time",
                render="palimpsest.cli_memory:print_retention"),
    ),
    Operation(
        "get_user_profile", READ,
        (Param("include_knowledge", bool, True, "Include facts about the user."),
         Param("include_assistant_knowledge", bool, False, "Include what the assistant learned about itself.",
               flag="--assistant")),
        http=Http("GET", "/profile", "The long-term profile: traits and knowledge (MemoryOS get_user_profile)",
                  name="profile"),
        mcp="The user's long-term profile: personality traits, preferences and knowledge distilled from past "
            "conversations. Use it to personalise an answer, not to look up a specific past event.",
        cli=Cli("profile", "get_user_profile: traits and knowledge distilled from hot sessions",
                render="palimpsest.cli_notes:print_profile"),
    ),
    Operation(
        "tiers", READ,
        (Param("conversation_id", str | None, None, "conversation for working memory (default: the latest)",
               flag="--conversation"),
         Param("now", datetime | None, None, "time for heat and the sensory buffer (default now)", flag="--at")),
        http=Http("GET", "/tiers", "Short-term pages, mid-term sessions, working memory and the sensory buffer"),
        cli=Cli("tiers", "short-term, mid-term sessions with heat, working memory, sensory buffer",
                render="palimpsest.cli_notes:print_tiers"),
    ),
    Operation(
        "archive", WRITE,
        (Param("memory_ids", list[str], help="the memories to archive", ge=1, le=10_000, positional=True,
               flag="memory_ids"),
         Param("reason", str, "archived by hand", "why (kept in the log)")),
        doc="Move memories out of default retrieval by hand (an event; nothing is deleted); the ids archived.",
        http=Http("POST", "/archive", "Archive memories by hand (an event; nothing is deleted)", answer="archived"),
        cli=Cli("archive archive", "archive memories by hand", render="palimpsest.cli_archive:print_moved"),
    ),
    Operation(
        "restore", WRITE,
        (Param("memory_ids", list[str], help="the archived memories to bring back", ge=1, le=10_000,
               positional=True, flag="memory_ids"),
         Param("reason", str, "restored by hand", "why (kept in the log)")),
        doc="Bring archived memories back into default retrieval (restoring counts as an access); the ids restored.",
        http=Http("POST", "/archive/restore", "Bring archived memories back into default retrieval",
                  answer="restored"),
        cli=Cli("archive restore", "bring archived memories back into default retrieval",
                render="palimpsest.cli_archive:print_moved"),
    ),
    Operation(
        "sweep", WRITE,
        (Param("now", datetime | None, None, "when retention is measured (default: now)", positional=True,
               flag="--at"),
         Param("dry_run", bool, False, "only report what would be archived; write nothing")),
        doc="Archive the memories whose retention at ``now`` fell below the policy's floor (of one user, of a "
            "tenant, or of every tenant); what was (with ``dry_run``, would be) archived, per user and reason.",
        user="optional", new_user=False,
        http=Http("POST", "/archive/sweep", "Archive the user's memories whose retention fell below the floor",
                  answer="archived",
                  tenant_summary="Archive the memories whose retention fell below the floor (your tenant)"),
        cli=Cli("archive sweep", "archive every memory whose retention fell below the policy's floor",
                render="palimpsest.cli_archive:print_sweep"),
    ),
    Operation(
        "archived", READ,
        http=Http("GET", "/archive", "The user's archived memories with when, why and their retention",
                  answer="archived"),
        cli=Cli("archive list", "one user's archived memories", render="palimpsest.cli_archive:print_archived"),
    ),
    Operation(
        "adjustments", READ,
        (Param("active_only", bool, False, "leave out reverted adjustments", flag="--active"),
         Param("target_id", str | None, None, "only the adjustments of this memory or note", flag="--memory-id")),
        http=Http("GET", "/adjustments", "The learning loop's adjustments (penalties, invalidations, skills)",
                  answer="adjustments"),
        cli=Cli("adjustments list", "the user's adjustments, oldest first, with the signals each aggregates",
                render="palimpsest.cli_feedback:print_adjustments"),
    ),
    Operation(
        "revert_adjustment", WRITE,
        (Param("adjustment_id", str, help="the adjustment to undo (its id in `adjustments list`)", positional=True,
               flag="adjustment_id"),
         Param("reason", str, "reverted by hand", "why (kept in the log)"),
         Param("now", datetime | None, None, "when (default: now)", flag="--at")),
        doc="Undo an adjustment (an ``adjustment_reverted`` event): what it invalidated or penalised comes back; "
            "one already reverted is left as it is (``reverted`` false, ``already_reverted_at``).",
        new_user=False,
        http=Http("POST", "/adjustments/revert", "Undo an adjustment (an event; what it invalidated or penalised "
                                                 "comes back)"),
        cli=Cli("adjustments revert", "undo an adjustment (an adjustment_reverted event; nothing is deleted)",
                render="palimpsest.cli_feedback:print_revert"),
    ),
    Operation(
        "feedback", READ,
        (Param("memory_id", str | None, None, "only the signals naming this memory or note"),),
        http=Http("GET", "/feedback", "The user's feedback signals, oldest first (only those naming memory_id, if "
                                      "given)", answer="signals", name="signals"),
        cli=Cli("feedback list", "the user's feedback signals, oldest first",
                render="palimpsest.cli_feedback:print_signals"),
    ),
    Operation(
        "user_stats", READ,
        (Param("conversation_id", str | None, None, "only what came from this conversation: its messages, the "
                                                    "notes drawn from them, the episodes and archived memories "
                                                    "holding them", flag="--conversation"),),
        doc="How much the memory holds of one user: messages, conversations, active notes, episodes and archived "
            "memories, with the first and last message times (of one conversation, given ``conversation_id``).",
        handler=ShardReader("actors.reads_user_stats"),
        http=Http("GET", "/stats", "How much is remembered of the user: messages, conversations, notes, episodes, "
                                   "archived memories"),
        mcp="How much is remembered of the user: counts of messages, conversations, active notes, episodes and "
            "archived memories, and the first and last message times. Use it to tell whether there is any memory "
            "of the user (or of one conversation) before searching it.",
        cli=Cli("user-stats", "how much is remembered of one user: messages, conversations, notes, episodes, "
                              "archived memories", render="palimpsest.cli_memory:print_user_stats"),
    ),
    Operation(
        "conversation", READ,
        (Param("conversation_id", str, help="the conversation's id", positional=True, flag="conversation_id"),
         Param("limit", int | None, None, "only its last messages, this many", ge=1, le=100_000),
         Param("withdrawn", bool, False, "include the messages archived by hand (a session's popped or cleared "
                                         "items)")),
        doc="One conversation's messages in the order they were recorded (the last ``limit``), each with its "
            "metadata and, if archived, when and why; those archived by hand are left out unless ``withdrawn``.",
        handler=ShardReader("actors.reads_conversation"),
        http=Http("GET", "/conversations/{conversation_id}", "One conversation's messages, in order",
                  answer="messages"),
        cli=Cli("conversation", "one conversation's messages, in order, with their metadata"),
    ),
    Operation(
        "conversations", READ,
        (Param("limit", int | None, None, "only the latest conversations, this many", ge=1, le=100_000),),
        doc="The user's conversations, the one spoken in last first: each one's id, how many messages it holds, its "
            "first and last message times and the text it opened with (read one whole with ``conversation``).",
        handler=ShardReader("actors.reads_conversation"),
        http=Http("GET", "/conversations", "The user's conversations, the latest first, with their message counts "
                                           "and times", answer="conversations"),
        mcp="The user's conversations, the one spoken in last first: each one's id, how many messages it holds, "
            "its first and last message times and the text it opened with. Use it to see when and about what the "
            "user talked before, or to find a conversation's id.",
        cli=Cli("conversations", "one user's conversations, the latest first, with their message counts and times"),
    ),
    Operation(
        "explain", READ,
        (Param("memory_id", str, help="a memory (turn), note or graph memory id", positional=True, flag="memory_id"),
         Param("at", datetime | None, None, "as of this time (default: now)"),
         Param("query", str | None, None, "also the score breakdown of this memory for this query")),
        http=Http("GET", "/explain/{memory_id}", "Why a memory or note is what it is at a time: sources, derivations, "
                                                 "touches, feedback, retention curve, archival, adjustments"),
        cli=Cli("explain", "why a memory or note is what it is: sources, derivations, touches, feedback, retention "
                           "curve, archival, adjustments", render="palimpsest.cli_learning:print_explain"),
    ),
    Operation(
        "memory_retention", READ,
        (Param("memory_id", str, help="the memory's id", positional=True, flag="memory_id"),
         Param("now", datetime | None, None, "the retention at this time (default: now)"),
         Param("until", datetime | None, None, "the curve's end (default: past the projected archival date)"),
         Param("points", int, 80, "the curve's points", ge=2, le=2000)),
        doc="One memory: the recorded message, its retention at ``now`` with why, its forgetting curve from creation "
            "to ``until`` with each counted access, its touches by reason, and its archival if it was archived.",
        http=Http("GET", "/memories/{memory_id}", "One memory: the message, its retention at `now` with why, its "
                                                  "forgetting curve, touches, archival", name="memory"),
    ),
    # -- the memory graph -------------------------------------------------------------------------------------------
    Operation(
        "consolidate", WRITE,
        (Param("decay", bool, False, "also archive the graph memories whose decayed importance fell below the floor"),
         Param("idle", bool, False, "also the users with nothing staged (their note check and decay)"),
         Param("at", datetime | None, None, "measure decay at this time (default: each user's latest message time)")),
        doc="Consolidate the staged graph memories (of one user, of a tenant, or of every tenant): one task per user "
            "marks superseded what rests on superseded notes, merges near-duplicates, links and abstracts; with "
            "``decay``, archives what decayed. Counts of users, staged memories, events and changes.",
        user="optional", new_user=False,
        http=Http("POST", "/consolidate", "Consolidate the user's staged graph memories",
                  tenant_summary="Consolidate staged graph memories (your tenant, or one user)"),
    ),
    Operation(
        "graph_export", READ,
        doc="The user's memory graph as ``html`` (self-contained, interactive) and ``graphml`` text, with counts.",
        http=Http("GET", "/graph", "The user's memory graph as interactive HTML and GraphML, with counts",
                  name="export"),
    ),
    Operation(
        "graph_data", READ,
        doc="The user's memory graph as the graph view draws it (``data``: nodes, edges, colours) with counts.",
        http=Http("GET", "/graph/view", "The user's memory graph as the graph view draws it (nodes, edges)",
                  name="graph_view"),
    ),
    # -- the memory graph's node merges ---------------------------------------------------------------------------
    Operation(
        "graph_merges", READ,
        http=Http("GET", "/graph/merges", "The node merges of the user's memory graph, oldest first",
                  answer="merges", name="merges"),
        cli=Cli("merges", "list the node merges of a user's memory graph (ids for unmerge)",
                render="palimpsest.cli_graph:print_merges"),
    ),
    Operation(
        "unmerge", WRITE,
        (Param("merge_id", str, help="the merge to undo (its id in `merges`)", positional=True, flag="merge_id"),
         Param("reason", str, "undone by the user", "why (kept in the log)")),
        http=Http("POST", "/graph/unmerge", "Undo a node merge (an event; the nodes stand apart again)"),
        cli=Cli("unmerge", "undo a node merge (an event: the nodes stand apart again, never re-merged)",
                render="palimpsest.cli_graph:print_unmerge"),
    ),
    # -- items: keyed records, versioned by their notes (projections.queries.items) -----------------------------
    Operation(
        "put_item", WRITE,
        (Param("key", str, help="the item's key in its collection", positional=True, flag="key"),
         Param("value", dict, help="the item's value, a JSON object", positional=True, flag="value"),
         Param("collection", str | None, None, "the collection (default: none)"),
         Param("text", str | None, None, "what search finds the item by (default: the texts in its value)"),
         Param("index", bool, True, "make the item findable by search (without: only by its key)")),
        http=Http("POST", "/items", "Put an item: the next version of the item of its key (the previous one is "
                                    "superseded, not removed)"),
        cli=Cli("items put", "put an item (the next version of its key); its value is a JSON object"),
    ),
    Operation(
        "delete_item", WRITE,
        (Param("key", str, help="the item's key in its collection", positional=True, flag="key"),
         Param("collection", str | None, None, "the collection (default: none)")),
        http=Http("POST", "/items/delete", "Delete an item: its version is retracted (the log keeps every version)"),
        cli=Cli("items delete", "delete an item (retracted: the log keeps its versions)"),
    ),
    Operation(
        "items", READ,
        (Param("collection", str | None, None, 'only this collection ("": the items outside any; default: all)'),
         Param("key", str | None, None, "only the item of this key"),
         Param("filter", dict | None, None, 'only items whose value matches, e.g. {"kind": "food"} or '
                                            '{"stars": {"$gte": 4}}'),
         Param("limit", int, 10, "at most this many", ge=1, le=10_000),
         Param("offset", int, 0, "skip this many first", ge=0)),
        doc="The user's items, the latest put first, each with its value, version, times and provenance.",
        handler=ShardReader("actors.reads_items"),
        http=Http("POST", "/items/list", "The user's items, the latest put first (of a collection, a key, a filter)",
                  answer="items"),
        cli=Cli("items list", "one user's items, the latest put first"),
    ),
    Operation(
        "item_collections", READ,
        doc="The user's collections that hold an item, with how many each holds.",
        handler=ShardReader("actors.reads_items"),
        http=Http("GET", "/items/collections", "The user's item collections, with how many items each holds",
                  answer="collections"),
        cli=Cli("items collections", "one user's item collections"),
    ),
    Operation(
        "search_items", READ,
        (Param("query", str, help="what to look for", positional=True, flag="query"),
         Param("collection", str | None, None, 'only this collection ("": the items outside any; default: all)'),
         Param("filter", dict | None, None, 'only items whose value matches, e.g. {"kind": "food"}'),
         Param("limit", int, 10, "at most this many", ge=1, le=1000),
         Param("offset", int, 0, "skip this many first", ge=0),
         Param("now", datetime | None, None, "when the question is asked (default: now)", flag="--at")),
        doc="The user's items that best match ``query`` (the hybrid search over the texts they were put with), "
            "best first, each with its score, rank, value, version, times and provenance.",
        handler=ShardReader("actors.reads_items", encodes="query"),
        http=Http("POST", "/items/search", "The user's items that best match a query, best first", answer="items"),
        cli=Cli("items search", "one user's items that best match a query"),
    ),
    # -- the whole store (admin keys) ------------------------------------------------------------------------------
    Operation(
        "stats", ADMIN, user=STORE,
        doc="Counts per store and shard: users, events, messages, touches, vectors per model.",
        http=Http("GET", "/stats", "Counts per store and shard (admin: they span every tenant)"),
        cli=Cli("stats", "counts per store and shard", render="palimpsest.cli:print_stats"),
    ),
    Operation(
        "digest", ADMIN, user=STORE,
        doc="Each shard's projection digests.",
        http=Http("GET", "/digest", "Each shard's projection digests (admin)", answer="shards"),
    ),
    Operation(
        "replay", ADMIN, user=STORE,
        doc="Rebuild every projection of every shard from the log (in parallel) and compare digests.",
        http=Http("POST", "/replay", "Rebuild every projection from the log and compare digests (admin)",
                  answer="shards", decode="palimpsest.client:replay_reports_of"),
    ),
)

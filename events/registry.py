"""Every event kind the log can hold, by ``kind``: conversation-memory, memory-graph, feedback,
learning-loop and erasure events.

The envelope decoder and the upcasters look kinds up here; a new event module
registers its classes by adding its table below.
"""

from __future__ import annotations

from events.erasure_events import ERASURE_EVENT_TYPES
from events.feedback_events import FEEDBACK_EVENT_TYPES
from events.graph_events import GRAPH_EVENT_TYPES
from events.learning_events import LEARNING_EVENT_TYPES
from events.model import EVENT_TYPES as MEMORY_EVENT_TYPES
from events.model import Event

EVENT_TYPES: dict[str, type[Event]] = {**MEMORY_EVENT_TYPES, **GRAPH_EVENT_TYPES, **FEEDBACK_EVENT_TYPES,
                                     **LEARNING_EVENT_TYPES, **ERASURE_EVENT_TYPES}

"""The reference engine: the event-driven timed engine and the functional executor. Every value,
race, error and trace row of the fast path is theirs."""

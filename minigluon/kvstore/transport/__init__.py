"""How the nodes of a distributed job reach each other: the transport interface the
roles use (base), messages (wire), sessions, the connection gate, same-host shared
memory, the van that moves them over ZeroMQ, and an in-process one whose nodes are
threads of one process (inproc, for tests). Nothing here knows what a server or a
worker does."""

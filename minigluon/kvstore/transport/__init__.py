"""How the nodes of a distributed job reach each other: messages (wire), sessions,
the connection gate, same-host shared memory, and the van that moves them over
ZeroMQ. Nothing here knows what a server or a worker does."""

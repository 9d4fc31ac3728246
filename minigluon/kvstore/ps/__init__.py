"""The parameter-server roles above the transport: configuration, a node's life in
the job, the scheduler, the servers, the worker's node and its request tickets, and
where each key's parts live."""

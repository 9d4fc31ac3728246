"""Request tickets of a worker, as ps-lite's Customer.

``new_request`` numbers and sends a group of messages (e.g. every part of a key)
and returns a ticket; the receive side hands each response to ``on_response``;
``wait(ticket)`` blocks until every response of the ticket arrived. Waits are
bounded and say what they waited for, and a failure anywhere in the job wakes them
with the error. Pushes are detached tickets: nobody waits for one by itself, so an
error a server reports for a push is raised by the next call that checks.

Requests made with a ``merge`` function (pushes) are not sent at once: they wait in a
queue per destination, which the I/O thread empties when it comes to it, merging what
waits for one destination into as few messages as ``merge`` makes. So pushes made one
key at a time while the I/O thread is busy leave together, as a push of a list would.
Any other request closes the queue first: nothing overtakes a push made before it.
"""
import itertools
import threading
import time

from ...base import MXNetError
from ..transport.wire import Message
from .node import ClusterError


class Ticket:
    """The responses to one group of requests, in the order they were sent."""
    __slots__ = ('what', 'responses', 'unanswered', 'done', 'detached', 'on_done')

    def __init__(self, what, count, detached, on_done=None):
        self.what = what
        self.on_done = on_done        # called on the I/O thread with the last response
        self.responses = [None] * count
        self.unanswered = {}          # request id -> (slot in responses, destination, Message)
        self.done = threading.Event()
        self.detached = detached
        if not count:
            self.done.set()

    def first_error(self):
        """The first error a server answered this request with, or None."""
        return next((r.err for r in self.responses if r is not None and r.err), None)


class _SendQueue:
    """Requests waiting to be merged and sent, by destination."""
    __slots__ = ('merge', 'messages')

    def __init__(self, merge):
        self.merge = merge
        self.messages = {}            # destination -> [Message]


class Customer:
    """Sends requests through ``van`` and matches the responses to their tickets.

    Parameters
    ----------
    van : Van
    failure : callable() -> str or None
        The job's failure, once there is one (every wait then raises it).
    wait_timeout : float
        Default bound of a wait, in seconds.
    """

    def __init__(self, van, failure, wait_timeout):
        self._van = van
        self._failure = failure
        self._wait_timeout = wait_timeout
        self._request_ids = itertools.count(1)
        self._open = {}               # request id -> its ticket (written by both threads)
        self._detached_errors = []
        self._lock = threading.Lock()  # orders after_detached against answers
        self._after = []              # [ids of detached tickets still open, callback]
        self._queue = None            # the open _SendQueue of merged requests, or None
        self._queue_lock = threading.Lock()
        self._merged = {}             # id of a merged message -> the request ids it carries
        self.messages_sent = 0        # (what left for the van, after merging)

    def new_request(self, requests, what, detached=False, on_done=None, copy_arrays=False,
                    merge=None):
        """Send each ``(destination, Message)`` of ``requests``; returns their ticket.

        ``on_done(ticket)``, when given, runs on the I/O thread once every response is
        in, before ``wait`` returns (e.g. to write a pulled value out where it goes).
        ``copy_arrays``: the arrays are the caller's, who may change them at once.
        ``merge(dest, messages)``: the messages for ``dest`` as fewer ones, a list of
        ``(message, the messages it carries)``, whose one answer (with no arrays) answers
        each request it carries; given, the requests wait in the queue (see the
        module's docstring).
        """
        requests = list(requests)
        ticket = Ticket(what, len(requests), detached, on_done)
        for slot, (dest, msg) in enumerate(requests):
            msg.req = next(self._request_ids)
            ticket.unanswered[msg.req] = (slot, dest, msg)
            self._open[msg.req] = ticket
        if merge is not None:
            self._enqueue(requests, merge, copy_arrays)
            return ticket
        with self._queue_lock:
            self._queue = None  # (requests after this one must not join what is queued)
        for dest, msg in requests:
            self.messages_sent += 1
            self._van.send(dest, msg, copy_arrays)
        return ticket

    def _enqueue(self, requests, merge, copy_arrays):
        for dest, msg in requests:  # (the arrays are the van's once this returns)
            self._van.prepare(dest, msg, copy_arrays)
        with self._queue_lock:
            queue, fresh = self._queue, False
            if queue is None or queue.merge != merge:
                queue = self._queue = _SendQueue(merge)
                fresh = True
            for dest, msg in requests:
                queue.messages.setdefault(dest, []).append(msg)
        if fresh:
            self._van.call_soon(lambda: self._flush(queue))

    def _flush(self, queue):
        """Send what ``queue`` holds, merged (on the I/O thread)."""
        with self._queue_lock:
            if self._queue is queue:
                self._queue = None
        for dest, messages in queue.messages.items():
            # (a request answered meanwhile was lost with its destination: see ``resend``)
            messages = [m for m in messages if m.req in self._open]
            if not messages:
                continue
            merged = queue.merge(dest, messages) if len(messages) > 1 else \
                [(messages[0], messages)]
            for msg, carried in merged:
                if carried != [msg]:
                    msg.req = next(self._request_ids)
                    self._merged[msg.req] = [m.req for m in carried]
                self.messages_sent += 1
                self._van.send(dest, msg)

    def on_response(self, msg):
        """Hand over a response (called on the van's I/O thread)."""
        carried = self._merged.pop(msg.req, [msg.req])
        for i, req in enumerate(carried):
            self._answer(req, msg, note_error=i == 0)  # (an error once, not per request)

    def _answer(self, req, msg, note_error):
        ticket = self._open.pop(req, None)
        if ticket is None:
            return  # an answer to a request nobody waits for any more
        slot = ticket.unanswered.pop(req)[0]
        ticket.responses[slot] = msg
        if ticket.detached and msg.err and note_error:
            self._detached_errors.append(msg.err)
        if not ticket.unanswered:
            if ticket.on_done is not None:
                ticket.on_done(ticket)
            ticket.done.set()
            if ticket.detached and self._after:
                self._answered(ticket)

    def resend(self, dest, drop=None):
        """Send every request to ``dest`` that is still unanswered again, under its request
        id (on the I/O thread, once the process that was ``dest`` is gone and another took
        its place: the lost one will never answer). ``drop(msg)``: whether to answer a
        request here as done instead (pushes, which the caller sends again its own way).
        A request whose arrays went through shared memory towards the lost process cannot
        be sent again, and is answered with an error saying so."""
        for ticket in {id(t): t for t in list(self._open.values())}.values():
            for req, (_, to, msg) in list(ticket.unanswered.items()):
                if to != dest:
                    continue
                if drop is not None and drop(msg):
                    self._answer(req, Message('reply', dest, req=req), note_error=False)
                elif msg.shm is not None:
                    self._answer(req, Message('reply', dest, req=req, err='%s to %s was lost '
                                            'with that process; make the call again'
                                            % (msg.cmd, dest)), note_error=True)
                else:
                    self._van.send(dest, Message(msg.cmd, '', req=req, key=msg.key,
                                               part=msg.part, body=msg.body,
                                               arrays=msg.arrays))
        for merged in [m for m, carried in self._merged.items()
                       if all(req not in self._open for req in carried)]:
            del self._merged[merged]

    def after_detached(self, callback):
        """Call ``callback()`` once every detached request sent so far is answered: at
        once when none is open, else on the I/O thread with the last answer."""
        with self._lock:
            waiting = {id(t) for t in list(self._open.values())
                       if t.detached and not t.done.is_set()}
            if waiting:
                self._after.append([waiting, callback])
                return
        callback()

    def _answered(self, ticket):
        with self._lock:
            for entry in self._after:
                entry[0].discard(id(ticket))
            ready = [cb for waiting, cb in self._after if not waiting]
            self._after = [entry for entry in self._after if entry[0]]
        for callback in ready:
            callback()

    def wake_all(self):
        """Wake every wait (the job failed: they raise its error)."""
        for ticket in list(self._open.values()):
            ticket.done.set()

    def wait(self, ticket, timeout=None):
        """Block until every response of ``ticket`` arrived; returns them in order.

        Raises ClusterError on a failure of the job or when ``timeout`` (default: the
        configured wait timeout) passes, MXNetError when a response reports an error.
        """
        timeout = timeout or self._wait_timeout
        deadline = time.monotonic() + timeout
        while not ticket.done.wait(0.05):
            if self._failure():
                break
            if time.monotonic() > deadline:
                silent = sorted(set(entry[1] for entry in list(ticket.unanswered.values())))
                raise ClusterError('%s: %s got no answer from %s within %.0f s'
                                   % (self._van.name, ticket.what, ', '.join(silent), timeout))
        if self._failure():
            raise ClusterError(self._failure())
        error = None if ticket.detached else ticket.first_error()
        if error:
            raise MXNetError(error)
        self.raise_detached_errors()
        return ticket.responses

    def wait_detached(self, timeout=None):
        """Wait until every detached request (every push) sent so far is answered."""
        for ticket in {id(t): t for t in list(self._open.values()) if t.detached}.values():
            self.wait(ticket, timeout)
        self.raise_detached_errors()

    def raise_detached_errors(self):
        """Raise what servers reported for detached requests since the last check."""
        if self._detached_errors:
            errors, self._detached_errors = self._detached_errors, []
            raise MXNetError('; '.join(errors))

"""Gluon's nesting formats: a (nested) list of arrays or symbols as one flat list plus a
format that puts the structure back (MXNet's ``_flatten``/``_regroup``).

A format is 0 for one item, n > 0 for one Symbol standing for its n outputs, -1 for
None, and a list of formats for a list. Hybridized blocks and the control-flow ops
(``foreach``, ``while_loop``, ``cond``) pass their inputs and outputs through it.
"""

__all__ = ['flatten', 'regroup']


def flatten(args, leaf_format, error):
    """``(flat list, format)`` of ``args``.

    Parameters
    ----------
    args : object
        A leaf or a (nested) list or tuple of leaves.
    leaf_format : callable
        ``leaf_format(x)`` is the format of ``x`` when it is a leaf, else None.
    error : callable
        ``error(x)`` is the exception to raise for ``x``, neither a leaf nor a list.
    """
    fmt = leaf_format(args)
    if fmt is not None:
        return [args], fmt
    if not isinstance(args, (list, tuple)):
        raise error(args)
    flat, fmts = [], []
    for arg in args:
        items, fmt = flatten(arg, leaf_format, error)
        flat.extend(items)
        fmts.append(fmt)
    return flat, fmts


def regroup(flat, fmt):
    """The (nested) structure ``fmt`` (``flatten``'s) over the list ``flat``."""
    def merge(items, fmt):
        if isinstance(fmt, int):
            if fmt < -1:
                raise ValueError('Unsupported encoded format %d.' % fmt)
            if fmt == 0:
                return items[0], items[1:]
            if fmt == -1:
                if items and items[0] is not None:
                    raise ValueError('We do not support passing types that are not None when '
                                     'the initial HybridBlock has received NoneType and has '
                                     'been hybridized. Received arg = %s, fmt = %s.'
                                     % (items[0], fmt))
                return None, items[1:]
            return items[:fmt], items[fmt:]
        out = []
        for sub in fmt:
            value, items = merge(items, sub)
            out.append(value)
        return out, items
    return merge(flat, fmt)[0]

"""Vision layers' ops: UpSampling, ROIPooling, LRN, L2Normalization, GridGenerator,
BilinearSampler, SpatialTransformer, and contrib's BilinearResize2D and ROIAlign.

Each follows MXNet 1.x's CPU kernel (rounding of ROI corners, sampling points, border
handling). The interpolating ops are linear in their data, and their weights separate
into a row part and a column part: they are built as small ``(out, in)`` matrices per
axis (per ROI for the ROI ops), so forward and backward are a pair of matrix products
and no Python loop runs over pixels.
"""
import numpy as np

from ... import backend
from ...base import MXNetError
from ..registry import register, shape_rule
from .conv import deconvolution


def _nchw(name, data):
    if data.ndim != 4:
        raise MXNetError('%s expects 4-D data (batch, channel, height, width), got shape %s'
                         % (name, data.shape))


def _pair(name, value):
    if isinstance(value, int):
        value = (value, value)
    value = tuple(int(v) for v in value)
    if len(value) != 2 or min(value) <= 0:
        raise MXNetError('%s must be two positive ints (height, width), got %r' % (name, value))
    return value


# ---- UpSampling ----

def _bilinear_geometry(scale):
    """(kernel, stride, pad) of the grouped Deconvolution that bilinear UpSampling is."""
    return 2 * scale - scale % 2, scale, int(np.ceil((scale - 1) / 2.0))


@register('UpSampling', num_inputs=None, takes_needs_grad=True)
def upsampling(xp, *data, scale=None, sample_type=None, num_filter=0,
               multi_input_mode='concat', num_args=None, workspace=512, needs_grad=None):
    """Upsample NCHW data by the integer ``scale``.

    ``sample_type='nearest'`` repeats each pixel; with several inputs the output has the
    first input's size times ``scale``, every other input is repeated up to that size,
    and they are concatenated along channels (``multi_input_mode='concat'``) or added
    (``'sum'``). ``sample_type='bilinear'`` takes ``(data, weight)`` and is a
    Deconvolution with ``num_group = channels``, kernel ``2 * scale - scale % 2``, stride
    ``scale`` and pad ``ceil((scale - 1) / 2)``; weight has shape ``(C, 1, k, k)``
    (``mx.init.Bilinear`` fills it with the bilinear kernel).
    """
    if scale is None or sample_type is None:
        raise MXNetError('UpSampling needs scale and sample_type (nearest or bilinear)')
    scale = int(scale)
    if scale < 1:
        raise MXNetError('UpSampling: scale must be >= 1, got %d' % scale)
    if num_args is not None and int(num_args) != len(data):
        raise MXNetError('UpSampling: num_args=%s but %d inputs were given'
                         % (num_args, len(data)))
    if sample_type == 'bilinear':
        if len(data) != 2:
            raise MXNetError('UpSampling with sample_type=bilinear takes two inputs, data '
                             'and weight; got %d' % len(data))
        x, weight = data
        _nchw('UpSampling', x)
        channels = x.shape[1]
        if num_filter not in (0, channels):
            raise MXNetError('UpSampling: bilinear num_filter must be the number of channels '
                             '(%d), got %d' % (channels, num_filter))
        k, s, p = _bilinear_geometry(scale)
        if weight.shape != (channels, 1, k, k):
            raise MXNetError('UpSampling: bilinear weight must have shape %s, got %s'
                             % ((channels, 1, k, k), weight.shape))
        grads = tuple(needs_grad or (True, True)) + (False,)
        out, backward = deconvolution(xp, x, weight, None, kernel=(k, k), stride=(s, s),
                                      pad=(p, p), num_filter=channels, num_group=channels,
                                      no_bias=True, needs_grad=grads)
        return out, lambda dy: backward(dy)[:2]
    if sample_type != 'nearest':
        raise MXNetError("UpSampling: sample_type must be 'nearest' or 'bilinear', got %r"
                         % (sample_type,))
    if multi_input_mode not in ('concat', 'sum'):
        raise MXNetError("UpSampling: multi_input_mode must be 'concat' or 'sum', got %r"
                         % (multi_input_mode,))
    for x in data:
        _nchw('UpSampling', x)
    oh, ow = data[0].shape[2] * scale, data[0].shape[3] * scale
    scales = []
    for x in data:
        if oh % x.shape[2] or ow % x.shape[3] or oh // x.shape[2] != ow // x.shape[3]:
            raise MXNetError('UpSampling: an input of shape %s cannot be repeated to the '
                             'output size %dx%d' % (x.shape, oh, ow))
        scales.append(oh // x.shape[2])
    if multi_input_mode == 'sum' and len({x.shape[1] for x in data}) > 1:
        raise MXNetError('UpSampling: with multi_input_mode=sum every input needs the same '
                         'number of channels, got %s' % [x.shape[1] for x in data])
    ups = [xp.repeat(xp.repeat(x, s, axis=2), s, axis=3) for x, s in zip(data, scales)]
    if len(ups) == 1:
        out = ups[0]
    elif multi_input_mode == 'sum':
        out = ups[0]
        for u in ups[1:]:
            out = out + u
    else:
        out = xp.concatenate(ups, axis=1)
    shapes = [x.shape for x in data]

    def backward(dy):
        grads, begin = [], 0
        for shape, s in zip(shapes, scales):
            n, c, h, w = shape
            part = dy if multi_input_mode == 'sum' else dy[:, begin:begin + c]
            begin += c
            grads.append(part.reshape(n, c, h, s, w, s).sum(axis=(3, 5)))
        return tuple(grads)
    return out, backward


@shape_rule('UpSampling')
def _upsampling_shapes(*shapes, scale=None, sample_type=None, **_):
    """bilinear: weight ``(C, 1, k, k)`` with ``k = 2 * scale - scale % 2``."""
    if sample_type != 'bilinear' or len(shapes) != 2 or not shapes[0] or not shapes[0][1]:
        return shapes
    k = _bilinear_geometry(int(scale))[0]
    return shapes[0], (shapes[0][1], 1, k, k)


# ---- ROIPooling ----

def _round_half_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


@register('ROIPooling', num_inputs=2)
def roi_pooling(xp, data, rois, pooled_size=None, spatial_scale=None):
    """Max-pool each region of interest of NCHW ``data`` into ``pooled_size`` bins.

    ``rois`` is ``(R, 5)``: ``[batch_index, x1, y1, x2, y2]`` in image coordinates;
    corners are scaled by ``spatial_scale`` and rounded (half away from zero) to pixels,
    a region is at least 1x1, and bin ``i`` of ``n`` over a region of ``L`` pixels spans
    ``floor(i * L / n)`` to ``ceil((i + 1) * L / n)``. Empty bins and rois whose batch
    index is out of range give 0. The output is ``(R, C, ph, pw)``; rois get no gradient.
    """
    _nchw('ROIPooling', data)
    if pooled_size is None or spatial_scale is None:
        raise MXNetError('ROIPooling needs pooled_size and spatial_scale')
    if rois.ndim != 2 or rois.shape[1] != 5:
        raise MXNetError('ROIPooling: rois must be (num_rois, 5), got shape %s' % (rois.shape,))
    ph_n, pw_n = _pair('ROIPooling: pooled_size', pooled_size)
    n, c, height, width = data.shape
    dtype = np.dtype(data.dtype)
    boxes = backend.to_host(rois).astype(dtype)
    corners = _round_half_away(boxes[:, 1:] * dtype.type(np.float32(spatial_scale)))
    out = xp.zeros((len(boxes), c, ph_n, pw_n), dtype=data.dtype)
    picks = []  # per roi: (roi, flat data index of each bin's max, bins that have one)
    for r, (box, (x1, y1, x2, y2)) in enumerate(zip(boxes, corners.astype(np.int64))):
        b = int(box[0])
        if b < 0 or b >= n:
            continue
        rows = _roi_bins(y1, y2, ph_n, height, dtype)
        cols = _roi_bins(x1, x2, pw_n, width, dtype)
        if rows is None or cols is None:
            continue
        (h0, h1, row_mask), (w0, w1, col_mask) = rows, cols
        crop = data[b, :, h0:h1, w0:w1]
        host_mask = row_mask[:, None, :, None] & col_mask[None, :, None, :]
        mask = xp.asarray(host_mask)
        lowest = -np.inf if dtype.kind == 'f' else np.iinfo(dtype).min
        windows = xp.where(mask, crop[:, None, None], dtype.type(lowest))
        flat = windows.reshape(c, ph_n, pw_n, -1)
        best = flat.argmax(axis=-1)
        filled = xp.asarray(host_mask.reshape(ph_n, pw_n, -1).any(axis=-1))
        value = xp.take_along_axis(flat, best[..., None], axis=-1)[..., 0]
        out[r] = xp.where(filled, value, dtype.type(0))
        bh, bw = best // (w1 - w0) + h0, best % (w1 - w0) + w0
        index = ((b * c + xp.arange(c).reshape(-1, 1, 1)) * height + bh) * width + bw
        picks.append((r, index, filled))
    shape, num_rois = data.shape, len(boxes)

    def backward(dy):
        grad = xp.zeros(int(np.prod(shape)), dtype=dy.dtype)
        if picks:
            index = xp.concatenate([i[:, f].ravel() for _, i, f in picks])
            values = xp.concatenate([dy[r][:, f].ravel() for r, _, f in picks])
            backend.scatter_add(grad, index, values)
        return grad.reshape(shape), xp.zeros((num_rois, 5), dtype=rois.dtype)
    return out, backward


def _roi_bins(start, end, bins, size, dtype):
    """``(first, stop, mask (bins, stop - first))``: the pixels of each bin of a ROI side
    from pixel ``start`` to ``end`` (inclusive), clipped to ``[0, size)``; None when every
    bin is empty."""
    length = max(end - start + 1, 1)
    bin_size = dtype.type(length) / dtype.type(bins)
    i = np.arange(bins, dtype=dtype)
    lo = np.clip(np.floor(i * bin_size).astype(np.int64) + start, 0, size)
    hi = np.clip(np.ceil((i + 1) * bin_size).astype(np.int64) + start, 0, size)
    if not (hi > lo).any():
        return None
    first, stop = int(lo[hi > lo].min()), int(hi[hi > lo].max())
    pixels = np.arange(first, stop)
    return first, stop, (pixels >= lo[:, None]) & (pixels < hi[:, None])


# ---- LRN ----

def _channel_window_sum(xp, x, nsize):
    """Sum over a window of ``nsize`` channels centred on each channel (zeros outside)."""
    half = nsize // 2
    padded = xp.zeros((x.shape[0], x.shape[1] + 2 * half) + x.shape[2:], dtype=x.dtype)
    padded[:, half:half + x.shape[1]] = x
    out = padded[:, :x.shape[1]].copy()
    for i in range(1, nsize):
        out += padded[:, i:i + x.shape[1]]
    return out


@register('LRN')
def lrn(xp, data, alpha=1e-4, beta=0.75, knorm=2.0, nsize=None):
    """Local response normalisation across channels:
    ``x / (knorm + alpha / nsize * sum of x**2 over nsize neighbouring channels) ** beta``.
    """
    if nsize is None or int(nsize) % 2 != 1:
        raise MXNetError('LRN needs an odd nsize (the window of channels), got %r' % (nsize,))
    if data.ndim < 3:
        raise MXNetError('LRN expects data (batch, channel, ...), got shape %s' % (data.shape,))
    nsize = int(nsize)
    dt = data.dtype.type
    salpha = dt(np.float32(alpha) / np.float32(nsize))
    norm = _channel_window_sum(xp, data * data, nsize) * salpha + dt(np.float32(knorm))
    scale = norm ** dt(-np.float32(beta))
    out = data * scale

    def backward(dy):
        inner = _channel_window_sum(xp, dy * data * scale / norm, nsize)
        return (dy * scale + dt(-2 * np.float32(beta)) * salpha * inner * data,)
    return out, backward


# ---- L2Normalization ----

@register('L2Normalization')
def l2_normalization(xp, data, eps=1e-10, mode='instance'):
    """``data / sqrt(sum(data ** 2) + eps)``, the sum over every axis but the first
    (``mode='instance'``), over the channel axis (``'channel'``) or over the spatial axes
    (``'spatial'``)."""
    if mode not in ('instance', 'channel', 'spatial'):
        raise MXNetError("L2Normalization: mode must be 'instance', 'channel' or 'spatial', "
                         "got %r" % (mode,))
    if data.ndim < 2 or (mode != 'instance' and data.ndim < 3):
        raise MXNetError('L2Normalization (mode %s) cannot take data of shape %s'
                         % (mode, data.shape))
    shape = data.shape
    if mode == 'instance':
        x3, axis = data.reshape(shape[0], 1, -1), 2
    else:
        x3 = data.reshape(shape[0], shape[1], -1)
        axis = 1 if mode == 'channel' else 2
    norm = xp.sqrt((x3 * x3).sum(axis=axis, keepdims=True) + data.dtype.type(np.float32(eps)))
    out = x3 / norm

    def backward(dy):
        dy3 = dy.reshape(x3.shape)
        dot = (dy3 * out).sum(axis=axis, keepdims=True)
        return (((dy3 - out * dot) / norm).reshape(shape),)
    return out.reshape(shape), backward


# ---- GridGenerator, BilinearSampler, SpatialTransformer ----

def _affine_grid_points(xp, target_shape, dtype):
    """``(3, H * W)``: the target's x and y in [-1, 1] (row-major) and a row of ones."""
    h, w = target_shape
    dt = np.dtype(dtype).type
    index = np.arange(h * w)
    x = dt(-1) + (index % w).astype(dtype) * dt(2.0 / (w - 1))
    y = dt(-1) + (index // w).astype(dtype) * dt(2.0 / (h - 1))
    return xp.asarray(np.stack([x, y, np.ones(h * w, dtype)]))


@register('GridGenerator')
def grid_generator(xp, data, transform_type=None, target_shape=(0, 0)):
    """A sampling grid for BilinearSampler, ``(N, 2, H, W)`` of x, y in [-1, 1].

    ``transform_type='affine'``: data ``(N, 6)`` is a 2x3 matrix per sample applied to
    the target's normalised coordinates (``target_shape`` = (H, W)). ``'warp'``: data
    ``(N, 2, H, W)`` is an optical flow in pixels added to each pixel's position.
    """
    if transform_type == 'affine':
        h, w = _pair('GridGenerator: target_shape', target_shape)
        if data.ndim != 2 or data.shape[1] != 6:
            raise MXNetError('GridGenerator (affine) expects data (batch, 6), got shape %s'
                             % (data.shape,))
        points = _affine_grid_points(xp, (h, w), data.dtype)
        theta = data.reshape(-1, 2, 3)
        out = xp.matmul(theta, points).reshape(-1, 2, h, w)

        def backward(dy):
            return (xp.matmul(dy.reshape(-1, 2, h * w), points.T).reshape(-1, 6),)
        return out, backward
    if transform_type == 'warp':
        if data.ndim != 4 or data.shape[1] != 2:
            raise MXNetError('GridGenerator (warp) expects a flow (batch, 2, H, W), got shape '
                             '%s' % (data.shape,))
        h, w = data.shape[2:]
        dt = data.dtype.type
        base = xp.asarray(np.stack(np.meshgrid(np.arange(w, dtype=data.dtype),
                                               np.arange(h, dtype=data.dtype))))
        half = xp.asarray(np.array([(dt(w) - 1) / 2, (dt(h) - 1) / 2],
                                   dtype=data.dtype).reshape(1, 2, 1, 1))
        return (data + base) / half - dt(1), lambda dy: (dy / half,)
    raise MXNetError("GridGenerator: transform_type must be 'affine' or 'warp', got %r"
                     % (transform_type,))


def _bilinear_sample(xp, data, grid):
    """BilinearSampler's forward: ``(out, backward)``, zeros outside the input."""
    _nchw('BilinearSampler', data)
    if grid.ndim != 4 or grid.shape[1] != 2 or grid.shape[0] != data.shape[0]:
        raise MXNetError('BilinearSampler: grid must be (batch, 2, H, W) with the batch of '
                         'data %s, got shape %s' % (data.shape, grid.shape))
    n, c, h, w = data.shape
    oh, ow = grid.shape[2:]
    dt = data.dtype.type
    x = (grid[:, 0] + dt(1)) * dt(w - 1) / dt(2)
    y = (grid[:, 1] + dt(1)) * dt(h - 1) / dt(2)
    x0, y0 = xp.floor(x), xp.floor(y)
    wx0, wy0 = dt(1) - (x - x0), dt(1) - (y - y0)
    x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
    flat = data.reshape(n, c, h * w)
    corners = []  # (flat index (N, 1, P), in bounds, weight along x, along y)
    for dy_, wy in ((0, wy0), (1, dt(1) - wy0)):
        for dx_, wx in ((0, wx0), (1, dt(1) - wx0)):
            yy, xx = y0 + dy_, x0 + dx_
            inside = (xx >= 0) & (xx < w) & (yy >= 0) & (yy < h)
            index = xp.where(inside, yy * w + xx, 0).reshape(n, 1, -1)
            corners.append((index, inside.reshape(n, 1, -1), wx.reshape(n, 1, -1),
                            wy.reshape(n, 1, -1)))
    values = [xp.where(inside, xp.take_along_axis(
        flat, xp.broadcast_to(index, (n, c, index.shape[2])), axis=2), dt(0))
        for index, inside, _, _ in corners]
    out = sum(v * (wx * wy) for v, (_, _, wx, wy) in zip(values, corners))

    def backward(dy, want_data=True, want_grid=True):
        dy3 = dy.reshape(n, c, -1)
        gdata = ggrid = None
        if want_data:
            gdata = xp.zeros(n * c * h * w, dtype=dy.dtype)
            base = (xp.arange(n * c).reshape(n, c, 1)) * (h * w)
            for index, inside, wx, wy in corners:
                contribution = xp.where(inside, dy3 * (wx * wy), dt(0))
                backend.scatter_add(gdata, (base + index).ravel(), contribution.ravel())
            gdata = gdata.reshape(data.shape)
        if want_grid:
            v00, v01, v10, v11 = values
            _, _, wx0_, wy0_ = corners[0]
            # d out / d x and d out / d y, summed over channels
            gx = (dy3 * ((v01 - v00) * wy0_ + (v11 - v10) * (dt(1) - wy0_))).sum(axis=1)
            gy = (dy3 * ((v10 - v00) * wx0_ + (v11 - v01) * (dt(1) - wx0_))).sum(axis=1)
            ggrid = xp.stack([gx * dt(w - 1) / dt(2), gy * dt(h - 1) / dt(2)], axis=1)
            ggrid = ggrid.reshape(grid.shape).astype(dy.dtype, copy=False)
        return gdata, ggrid
    return out.reshape(n, c, oh, ow), backward


@register('BilinearSampler', num_inputs=2)
def bilinear_sampler(xp, data, grid, cudnn_off=None):
    """Sample NCHW ``data`` at ``grid`` ``(N, 2, H', W')`` (x then y, normalised to
    [-1, 1]) with bilinear interpolation; points outside the input read zeros. The
    output is ``(N, C, H', W')``; both data and grid get gradients."""
    return _bilinear_sample(xp, data, grid)


@register('SpatialTransformer', num_inputs=2)
def spatial_transformer(xp, data, loc, target_shape=(0, 0), transform_type=None,
                        sampler_type=None, cudnn_off=None):
    """A spatial transformer: the affine grid of ``loc`` ``(N, 6)`` over ``target_shape``
    (GridGenerator), sampled from ``data`` bilinearly (BilinearSampler)."""
    if transform_type != 'affine' or sampler_type != 'bilinear':
        raise MXNetError("SpatialTransformer supports transform_type='affine' and "
                         "sampler_type='bilinear', got %r and %r" % (transform_type,
                                                                    sampler_type))
    grid, grid_backward = grid_generator(xp, loc.reshape(loc.shape[0], -1), 'affine',
                                         target_shape)
    out, sample_backward = _bilinear_sample(xp, data, grid)

    def backward(dy):
        gdata, ggrid = sample_backward(dy)
        return gdata, grid_backward(ggrid)[0].reshape(loc.shape)
    return out, backward


# ---- contrib: BilinearResize2D ----

def _resize_matrix(size_in, size_out, align_corners, dtype):
    """``(size_out, size_in)``: the interpolation weights along one axis, computed in
    float32 as MXNet's kernel does, the weights then in ``dtype``."""
    f32 = np.float32
    if size_out > 1:
        scale = f32(size_in - 1) / f32(size_out - 1) if align_corners \
            else f32(size_in) / f32(size_out)
    else:
        scale = f32(0)
    dst = np.arange(size_out, dtype=f32)
    if align_corners:
        src = scale * dst
    else:
        # ``scale * (dst + 0.5) - 0.5`` is worked out in double there, then stored as float
        src = (np.float64(scale) * (np.arange(size_out) + 0.5) - 0.5).astype(f32)
        src = np.maximum(src, f32(0))
    low = src.astype(np.int64)
    step = (low < size_in - 1).astype(np.int64)
    high_w = (src - low.astype(f32)).astype(dtype)
    low_w = np.asarray(1, dtype) - high_w
    matrix = np.zeros((size_out, size_in), dtype)
    rows = np.arange(size_out)
    np.add.at(matrix, (rows, low), low_w)
    np.add.at(matrix, (rows, low + step), high_w)
    return matrix


def _resized_size(shape, like, height, width, scale_height, scale_width, mode):
    h, w = shape[2], shape[3]
    if mode == 'size':
        if scale_height is not None:  # MXNet reads both scales once scale_height is set
            if scale_width is None:
                raise MXNetError('BilinearResize2D: scale_height needs scale_width too')
            return int(np.float32(scale_height) * h), int(np.float32(scale_width) * w)
        return int(height), int(width)
    if mode == 'odd_scale':
        if scale_height is None or scale_width is None:
            raise MXNetError('BilinearResize2D: mode odd_scale needs scale_height and '
                             'scale_width')
        return tuple(int(n * np.float32(s)) if n % 2 == 0 else int((n - 1) * np.float32(s)) + 1
                     for n, s in ((h, scale_height), (w, scale_width)))
    if mode == 'like':
        if like is None or like.ndim != 4:
            raise MXNetError('BilinearResize2D: mode like needs a 4-D second input "like"')
        return like.shape[2], like.shape[3]
    steps = {'to_even_down': (0, -1), 'to_even_up': (0, 1), 'to_odd_down': (1, -1),
             'to_odd_up': (1, 1)}
    if mode not in steps:
        raise MXNetError("BilinearResize2D: mode must be one of size, odd_scale, like, %s; "
                         "got %r" % (', '.join(steps), mode))
    parity, step = steps[mode]
    return tuple(n if n % 2 == parity else n + step for n in (h, w))


@register('_contrib_BilinearResize2D', num_inputs=2)
def bilinear_resize_2d(xp, data, like=None, height=1, width=1, scale_height=None,
                       scale_width=None, mode='size', align_corners=True):
    """Resize NCHW data bilinearly to ``(height, width)``, or by ``scale_height`` and
    ``scale_width``, or as ``mode`` says (``'like'``: to the size of the second input;
    ``'odd_scale'``, ``'to_even_down'``, ``'to_even_up'``, ``'to_odd_down'``,
    ``'to_odd_up'``). ``align_corners`` maps the corner pixels onto each other."""
    _nchw('BilinearResize2D', data)
    oh, ow = _resized_size(data.shape, like, height, width, scale_height, scale_width, mode)
    if oh < 1 or ow < 1:
        raise MXNetError('BilinearResize2D: the output size %dx%d must be positive' % (oh, ow))
    rows = xp.asarray(_resize_matrix(data.shape[2], oh, align_corners, data.dtype))
    cols_t = xp.asarray(_resize_matrix(data.shape[3], ow, align_corners, data.dtype).T)
    out = xp.matmul(xp.matmul(rows, data), cols_t)
    like_shape = None if like is None else like.shape

    def backward(dy):
        grad = xp.matmul(xp.matmul(rows.T, dy), cols_t.T)
        return grad, None if like_shape is None else xp.zeros(like_shape, dtype=like.dtype)
    return out, backward


# ---- contrib: ROIAlign ----

def _sampling_grid(roi_h, roi_w, ph, pw, ratio, dt):
    """Each roi's bin sizes and its sample points per bin along each axis: ``ratio`` when
    positive, else as many as the bin is wide (rounded up), as MXNet's ROIAlign counts."""
    bin_h, bin_w = roi_h / dt(ph), roi_w / dt(pw)
    if ratio > 0:
        grid_h = grid_w = np.full(len(roi_h), int(ratio))
    else:
        grid_h = np.ceil(bin_h).astype(np.int64)
        grid_w = np.ceil(bin_w).astype(np.int64)
    return bin_h, bin_w, grid_h, grid_w


def host_rois(op, rois, batch_size, dtype):
    """``rois`` on the host in ``dtype``, and their batch indices (column 0), each checked
    to name one of the ``batch_size`` images."""
    boxes = backend.to_host(rois).astype(dtype)
    batch = boxes[:, 0].astype(np.int64)
    if ((batch < 0) | (batch >= batch_size)).any():
        raise MXNetError('%s: every roi needs a batch index in [0, %d), got %s'
                         % (op, batch_size, batch.tolist()))
    return boxes, batch


def _align_weights(start, bin_size, grid, pooled, size, dtype):
    """``(R, pooled, size)``: for each ROI and bin, the mean bilinear weight of each input
    row (or column) over the bin's ``grid`` sampling points along this axis."""
    dt = np.dtype(dtype).type
    count = len(start)
    samples = int(grid.max()) if count else 1
    p = np.arange(pooled, dtype=dtype).reshape(1, -1, 1)
    i = np.arange(samples).reshape(1, 1, -1)
    g = grid.astype(dtype).reshape(-1, 1, 1)
    bins = bin_size.reshape(-1, 1, 1)
    pos = start.reshape(-1, 1, 1) + p * bins + (i + 0.5).astype(dtype) * bins / g
    used = (i < grid.reshape(-1, 1, 1)) & (pos >= -1) & (pos <= size)
    pos = np.maximum(pos, dt(0))
    low = pos.astype(np.int64)
    top = low >= size - 1
    low = np.where(top, size - 1, low)
    high = np.where(top, size - 1, low + 1)
    frac = np.where(top, dt(0), pos - low.astype(dtype))
    weights = np.zeros((count, pooled, size), dtype)
    shape = (count, pooled, samples)
    r = np.broadcast_to(np.arange(count).reshape(-1, 1, 1), shape)
    b = np.broadcast_to(np.arange(pooled).reshape(1, -1, 1), shape)
    scale = np.where(used, dt(1), dt(0)) / g
    np.add.at(weights, (r, b, low), (dt(1) - frac) * scale)
    np.add.at(weights, (r, b, high), frac * scale)
    return weights


@register('_contrib_ROIAlign', num_inputs=2)
def roi_align(xp, data, rois, pooled_size=None, spatial_scale=None, sample_ratio=-1,
              position_sensitive=False, aligned=False):
    """Average bilinear samples of each region of interest into ``pooled_size`` bins
    (Mask R-CNN's RoIAlign).

    ``rois`` is ``(R, 5)`` ``[batch_index, x1, y1, x2, y2]`` (or ``(R, 4)``, batch 0);
    each bin averages ``sample_ratio`` x ``sample_ratio`` points (adaptive,
    ``ceil(roi size / pooled size)``, when <= 0). ``aligned`` shifts by half a pixel
    (Detectron2). ``position_sensitive``: bin ``(i, j)`` of output channel ``c`` reads
    input channel ``c * ph * pw + i * pw + j``. Rois with a negative batch index give 0;
    rois get no gradient.
    """
    _nchw('ROIAlign', data)
    if pooled_size is None or spatial_scale is None:
        raise MXNetError('ROIAlign needs pooled_size and spatial_scale')
    if rois.ndim != 2 or rois.shape[1] not in (4, 5):
        raise MXNetError('ROIAlign: rois must be (num_rois, 5) or (num_rois, 4), got shape '
                         '%s' % (rois.shape,))
    ph, pw = _pair('ROIAlign: pooled_size', pooled_size)
    n, c, h, w = data.shape
    if position_sensitive and c % (ph * pw):
        raise MXNetError('ROIAlign: position_sensitive needs channels (%d) divisible by '
                         'pooled height * width (%d)' % (c, ph * pw))
    dtype = np.dtype(data.dtype)
    dt = dtype.type
    boxes = backend.to_host(rois).astype(dtype)
    batch = boxes[:, 0].astype(np.int64) if boxes.shape[1] == 5 else np.zeros(len(boxes), int)
    if (batch >= n).any():
        raise MXNetError('ROIAlign: a roi names batch index %d but data has %d images'
                         % (batch.max(), n))
    offset = dt(0.5) if aligned else dt(0)
    coords = boxes[:, -4:] * dt(np.float32(spatial_scale)) - offset
    x1, y1, x2, y2 = coords.T
    roi_w, roi_h = x2 - x1, y2 - y1
    if aligned:
        if (roi_w <= 0).any() or (roi_h <= 0).any():
            raise MXNetError('ROIAlign: with aligned=True every roi needs x2 > x1 and y2 > y1')
    else:
        roi_w, roi_h = np.maximum(roi_w, dt(1)), np.maximum(roi_h, dt(1))
    bin_h, bin_w, grid_h, grid_w = _sampling_grid(roi_h, roi_w, ph, pw, sample_ratio, dt)
    rows = xp.asarray(_align_weights(y1, bin_h, grid_h, ph, h, dtype))  # (R, ph, H)
    cols = xp.asarray(_align_weights(x1, bin_w, grid_w, pw, w, dtype))  # (R, pw, W)
    c_out = c // (ph * pw) if position_sensitive else c
    out = xp.zeros((len(boxes), c_out, ph, pw), dtype=data.dtype)
    groups = [(b, np.nonzero(batch == b)[0]) for b in np.unique(batch) if b >= 0]

    def pool(image, r, cl):
        if position_sensitive:
            parts = image.reshape(c_out, ph, pw, h, w)
            t = xp.einsum('cpqhw,rqw->rcpqh', parts, cl)
            return xp.einsum('rph,rcpqh->rcpq', r, t)
        return xp.matmul(r[:, None], xp.matmul(image[None], cl.transpose(0, 2, 1)[:, None]))

    for b, idx in groups:
        sel = xp.asarray(idx)
        out[sel] = pool(data[b], rows[sel], cols[sel])

    def backward(dy):
        grad = xp.zeros(data.shape, dtype=dy.dtype)
        for b, idx in groups:
            sel = xp.asarray(idx)
            r, cl, d = rows[sel], cols[sel], dy[sel]
            if position_sensitive:
                t = xp.einsum('rph,rcpq->rcpqh', r, d)
                grad[b] += xp.einsum('rcpqh,rqw->cpqhw', t, cl).reshape(c, h, w)
            else:
                t = xp.matmul(r.transpose(0, 2, 1)[:, None], xp.matmul(d, cl[:, None]))
                grad[b] += t.sum(axis=0)
        return grad, xp.zeros(rois.shape, dtype=rois.dtype)
    return out, backward

"""OpenCV 3.4's image arithmetic, as MXNet 1.9.1 ships it, reproduced in numpy: resizing
(all five interpolations, OpenCV's fixed-point paths and rounding), affine warps,
border padding, the HLS and gray conversions and the scaled additions the colour
jitters use. MXNet's image ops and its C++ iterators call these, so with them the same
inputs give the same pixels as in MXNet.
"""
import math

import numpy as np

from ..base import MXNetError

__all__ = ['cv_resize', 'cv_warp_affine', 'cv_copy_make_border', 'cv_bgr_to_hls',
           'cv_hls_to_bgr', 'cv_rgb_to_gray', 'convert_scale', 'add_weighted']

_F32 = np.float32
_F32_EPS = np.finfo(np.float32).eps


def _cv_round(values):
    """cvRound: to nearest, ties to even (what saturate_cast does to floats)."""
    return np.rint(values)


def _saturate_u8(values):
    return np.clip(_cv_round(values), 0, 255).astype(np.uint8)


def _round_float_to_int(value):
    """cvRound of one float or double, as a Python int."""
    return int(np.rint(value))


_RESIZE_BITS = 11               # INTER_RESIZE_COEF_BITS: resize weights are 1/2048ths
_RESIZE_ONE = 1 << _RESIZE_BITS
_NEAREST, _LINEAR, _CUBIC, _AREA, _LANCZOS = 0, 1, 2, 3, 4


def _cubic_weights(x):
    """OpenCV's bicubic weights (A = -0.75) at float offsets ``x``, shape (..., 4)."""
    a = _F32(-0.75)
    x = np.asarray(x, _F32)
    one, two, three, four, five, eight = (_F32(v) for v in (1, 2, 3, 4, 5, 8))
    xp1 = x + one
    w0 = ((a * xp1 - five * a) * xp1 + eight * a) * xp1 - four * a
    w1 = ((a + two) * x - (a + three)) * x * x + one
    om = one - x
    w2 = ((a + two) * om - (a + three)) * om * om + one
    w3 = one - w0 - w1 - w2
    return np.stack([w0, w1, w2, w3], axis=-1).astype(_F32)


def _lanczos_weights(x):
    """OpenCV's Lanczos-4 weights at float offsets ``x``, shape (..., 8)."""
    s45 = 0.70710678118654752440084436210485
    cs = [(1, 0), (-s45, -s45), (0, 1), (s45, -s45), (-1, 0), (s45, s45), (0, -1), (-s45, s45)]
    out = []
    for xv in np.asarray(x, _F32).reshape(-1):
        if xv < _F32_EPS:
            coeffs = [_F32(0)] * 8
            coeffs[3] = _F32(1)
            out.append(coeffs)
            continue
        y0 = -(float(xv) + 3) * math.pi * 0.25
        s0, c0 = math.sin(y0), math.cos(y0)
        coeffs, total = [], _F32(0)
        for i in range(8):
            y = -(float(xv) + 3 - i) * math.pi * 0.25
            coeffs.append(_F32((cs[i][0] * s0 + cs[i][1] * c0) / (y * y)))
            total = _F32(total + coeffs[-1])
        total = _F32(1) / total
        out.append([_F32(c * total) for c in coeffs])
    return np.asarray(out, _F32).reshape(np.shape(x) + (8,))


def _kernel_weights(interp, frac):
    if interp == _CUBIC:
        return _cubic_weights(frac)
    if interp == _LANCZOS:
        return _lanczos_weights(frac)
    frac = np.asarray(frac, _F32)
    return np.stack([_F32(1) - frac, frac], axis=-1)


def _axis_taps(src_len, dst_len, scale, inv_scale, interp, ksize, clamp_edges, fixed=True):
    """Per output position: the source taps and the fixed-point weights (float32 ones
    for floating-point images: ``fixed=False``), as OpenCV's resize computes them for
    one axis."""
    pos = np.arange(dst_len, dtype=np.float64)
    if interp == _AREA:        # INTER_AREA when enlarging: a bilinear variant
        start = np.floor(pos * scale).astype(np.int64)
        frac = ((pos + 1) - (start + 1) * inv_scale).astype(_F32)
        frac = np.where(frac <= 0, _F32(0), frac - np.floor(frac)).astype(_F32)
    else:
        f = ((pos + 0.5) * scale - 0.5).astype(_F32)
        start = np.floor(f).astype(np.int64)
        frac = (f - start.astype(_F32)).astype(_F32)
    if clamp_edges:            # linear kinds pin the edges to the first / last pixel
        low, high = start < 0, start >= src_len - 1
        frac = np.where(low | high, _F32(0), frac).astype(_F32)
        start = np.where(low, 0, np.where(high, src_len - 1, start))
    weights = _kernel_weights(interp, frac)
    if fixed:
        weights = np.rint(weights * _F32(_RESIZE_ONE)).astype(np.int64)
    taps = start[:, None] + np.arange(ksize) - (ksize // 2 - 1)
    return np.clip(taps, 0, src_len - 1), weights


def _resize_nearest(img, dw, dh):
    sh, sw = img.shape[:2]
    xs = np.minimum(np.floor(np.arange(dw) * (1.0 / (dw / sw))).astype(np.int64), sw - 1)
    ys = np.minimum(np.floor(np.arange(dh) * (1.0 / (dh / sh))).astype(np.int64), sh - 1)
    return img[ys][:, xs]


def _resize_area_fast(img, dw, dh, sx, sy):
    sh, sw, cn = img.shape
    if img.dtype != np.uint8:    # float images: the block's sum times 1 / (sx * sy)
        blocks = img[:dh * sy, :dw * sx].reshape(dh, sy, dw, sx, cn)
        return blocks.sum(axis=(1, 3)) * img.dtype.type(1.0 / (sx * sy))
    blocks = img[:dh * sy, :dw * sx].astype(np.int64).reshape(dh, sy, dw, sx, cn)
    total = blocks.sum(axis=(1, 3))
    if sx == 2 and sy == 2:
        return ((total + 2) >> 2).astype(np.uint8)
    return _saturate_u8(total.astype(_F32) * (_F32(1) / _F32(sx * sy)))


def _area_table(src_len, dst_len, scale):
    """computeResizeAreaTab: per output position, (source index, float weight) pairs."""
    rows = []
    for d in range(dst_len):
        f1 = d * scale
        f2 = f1 + scale
        cell = min(scale, src_len - f1)
        s1, s2 = int(math.ceil(f1)), int(math.floor(f2))
        s2 = min(s2, src_len - 1)
        s1 = min(s1, s2)
        pairs = []
        if s1 - f1 > 1e-3:
            pairs.append((s1 - 1, _F32((s1 - f1) / cell)))
        pairs += [(s, _F32(1.0 / cell)) for s in range(s1, s2)]
        if f2 - s2 > 1e-3:
            pairs.append((s2, _F32(min(min(f2 - s2, 1.0), cell) / cell)))
        rows.append(pairs)
    width = max(len(p) for p in rows)
    index = np.zeros((dst_len, width), np.int64)
    weight = np.zeros((dst_len, width), _F32)
    for d, pairs in enumerate(rows):
        for k, (s, w) in enumerate(pairs):
            index[d, k], weight[d, k] = s, w
    return index, weight


def _resize_area(img, dw, dh, scale_x, scale_y):
    """INTER_AREA when shrinking: float sums in OpenCV's order (zero-weight padding
    adds exactly nothing)."""
    sh, sw, cn = img.shape
    work = np.float64 if img.dtype == np.float64 else _F32
    xi, xw = _area_table(sw, dw, scale_x)
    yi, yw = _area_table(sh, dh, scale_y)
    flat = img.reshape(sh, sw * cn)
    channel = np.arange(cn)
    rows = np.zeros((sh, dw * cn), work)
    for k in range(xi.shape[1]):
        columns = (xi[:, k, None] * cn + channel).reshape(-1)
        rows += np.take(flat, columns, axis=1).astype(work) * np.repeat(xw[:, k], cn)
    out = np.zeros((dh, dw * cn), work)
    for k in range(yi.shape[1]):
        out += yw[:, k, None] * rows[yi[:, k]]
    if img.dtype != np.uint8:
        return out.astype(img.dtype).reshape(dh, dw, cn)
    return _saturate_u8(out).reshape(dh, dw, cn)


def _resize_separable_float(img, dw, dh, xt, xw, yt, yw):
    """OpenCV's floating-point resize: float32 weights, sums in the image's precision
    (float32, or float64 for float64 images), rows first, then columns."""
    work = np.float64 if img.dtype == np.float64 else _F32
    data = img.astype(work, copy=False)
    rows = sum(data[:, xt[:, k]] * xw[:, k, None].astype(work) for k in range(xt.shape[1]))
    out = sum(rows[yt[:, k]] * yw[:, k, None, None].astype(work) for k in range(yt.shape[1]))
    return out.astype(img.dtype, copy=False)


def cv_resize(img, dw, dh, interp):
    """``cv::resize`` of an HxWxC uint8 image to ``dw`` x ``dh`` as OpenCV 3.4 does it.

    Parameters
    ----------
    img : numpy.ndarray
        HxWxC uint8 (OpenCV's fixed-point paths), float32 or float64 (its
        floating-point ones).
    dw, dh : int
        Output width and height.
    interp : int
        0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos-4.

    Returns
    -------
    numpy.ndarray
        dh x dw x C, of ``img``'s dtype.
    """
    sh, sw, cn = img.shape
    if dw <= 0 or dh <= 0:
        raise MXNetError('cannot resize a %dx%d image to %dx%d: sizes must be positive'
                         % (sw, sh, dw, dh))
    if (dw, dh) == (sw, sh):
        return img.copy()
    if interp == _NEAREST:
        return _resize_nearest(img, dw, dh)
    inv_x, inv_y = dw / sw, dh / sh
    scale_x, scale_y = 1.0 / inv_x, 1.0 / inv_y
    isx, isy = _round_float_to_int(scale_x), _round_float_to_int(scale_y)
    eps = np.finfo(np.float64).eps
    area_fast = abs(scale_x - isx) < eps and abs(scale_y - isy) < eps
    if interp == _LINEAR and area_fast and isx == 2 and isy == 2:
        interp = _AREA
    if interp == _AREA and scale_x >= 1 and scale_y >= 1:
        if area_fast:
            return _resize_area_fast(img, dw, dh, isx, isy)
        return _resize_area(img, dw, dh, scale_x, scale_y)
    ksize = {_CUBIC: 4, _LANCZOS: 8}.get(interp, 2)
    fixed = img.dtype == np.uint8
    xt, xw = _axis_taps(sw, dw, scale_x, inv_x, interp, ksize, ksize == 2, fixed)
    yt, yw = _axis_taps(sh, dh, scale_y, inv_y, interp, ksize, False, fixed)
    if not fixed:
        return _resize_separable_float(img, dw, dh, xt, xw, yt, yw)
    # the horizontal pass, exact in integers, on the source rows the output uses only
    needed, yt = np.unique(yt, return_inverse=True)
    yt = yt.reshape(dh, ksize)
    flat = img.reshape(sh, sw * cn)[needed]
    channel = np.arange(cn)
    rows = 0
    for k in range(ksize):       # |sums| < 2^21: int32 holds them
        columns = (xt[:, k, None] * cn + channel).reshape(-1)
        weight = np.repeat(xw[:, k], cn).astype(np.int32)
        rows = rows + np.take(flat, columns, axis=1).astype(np.int32) * weight
    work = np.int32 if ksize == 2 else np.int64     # the vertical sums need 64 bits
    picked = [rows[yt[:, k]].astype(work, copy=False) for k in range(ksize)]
    beta = [yw[:, k, None].astype(work) for k in range(ksize)]
    if ksize == 2:
        # VResizeLinear for 8u: each product shifted on its own, as the SIMD code does
        out = (((beta[0] * (picked[0] >> 4)) >> 16) + ((beta[1] * (picked[1] >> 4)) >> 16)
               + 2) >> 2
        return np.clip(out, 0, 255).astype(np.uint8).reshape(dh, dw, cn)
    exact = sum(b * f for b, f in zip(beta, picked))
    out = np.clip((exact + (1 << 21)) >> 22, 0, 255)
    if ksize == 4:
        # SSE2 VResizeCubicVec_32s8u: 8 values at a time in float, rounded to even
        vec = (dw * cn) // 8 * 8
        scale = _F32(1.0 / (1 << 22))
        acc = picked[0][:, :vec].astype(_F32) * (beta[0].astype(_F32) * scale)
        for b, f in zip(beta[1:], picked[1:]):
            acc = acc + f[:, :vec].astype(_F32) * (b.astype(_F32) * scale)
        out[:, :vec] = np.clip(np.rint(acc), 0, 255)
    return out.astype(np.uint8).reshape(dh, dw, cn)


_REMAP_BITS = 15                # INTER_REMAP_COEF_BITS: warp weights are 1/32768ths
_TAB_BITS = 5                   # INTER_BITS: warps sample at 1/32 pixel
_TAB = 1 << _TAB_BITS


def _remap_table(interp):
    """initInterTab2D: fixed-point 2D weights for each (fy, fx) in 1/32 steps, shape
    (32, 32, k, k), each summing to exactly 32768."""
    ksize = {_CUBIC: 4, _LANCZOS: 8}.get(interp, 2)
    one_d = _kernel_weights(interp, np.arange(_TAB, dtype=_F32) * _F32(1.0 / _TAB))
    table = np.zeros((_TAB, _TAB, ksize, ksize), np.int64)
    for i in range(_TAB):
        for j in range(_TAB):
            weights = (one_d[i][:, None] * one_d[j][None, :]).astype(_F32)
            fixed = np.rint(weights * _F32(1 << _REMAP_BITS)).astype(np.int64)
            diff = int(fixed.sum()) - (1 << _REMAP_BITS)
            if diff:
                # move the rounding error onto the largest (or smallest) central weight
                h = ksize // 2
                lo = hi = (h, h)
                for k1 in (h, h + 1):
                    for k2 in (h, h + 1):
                        if fixed[k1, k2] < fixed[lo]:
                            lo = (k1, k2)
                        elif fixed[k1, k2] > fixed[hi]:
                            hi = (k1, k2)
                if diff < 0:
                    fixed[hi] -= diff
                else:
                    fixed[lo] -= diff
            table[i, j] = fixed
    return table


_REMAP_TABLES = {}


def cv_warp_affine(img, matrix, dw, dh, interp, fill):
    """``cv::warpAffine(img, M, (dw, dh), interp, BORDER_CONSTANT, fill)`` as OpenCV 3.4
    computes it: the inverse map in 1/32 pixel fixed point, then the table weights.

    Parameters
    ----------
    img : numpy.ndarray
        HxWxC uint8.
    matrix : numpy.ndarray
        The 2x3 float32 forward transform.
    dw, dh : int
        Output width and height.
    interp : int
        0 nearest, 1 bilinear (3, area, is bilinear too), 2 bicubic, 4 Lanczos-4.
    fill : int
        The border value of the first three channels (a fourth channel gets 0).
    """
    sh, sw, cn = img.shape
    if dw <= 0 or dh <= 0:
        raise MXNetError('cannot warp to a %dx%d image: sizes must be positive' % (dw, dh))
    m = np.asarray(matrix, _F32).astype(np.float64).reshape(6)
    det = m[0] * m[4] - m[1] * m[3]
    det = 1.0 / det if det != 0 else 0.0
    a11, a22 = m[4] * det, m[0] * det
    m[0], m[1], m[3], m[4] = a11, m[1] * -det, m[3] * -det, a22
    b1 = -m[0] * m[2] - m[1] * m[5]
    b2 = -m[3] * m[2] - m[4] * m[5]
    m[2], m[5] = b1, b2
    interp = _LINEAR if interp == _AREA else interp
    xs, ys = np.arange(dw, dtype=np.float64), np.arange(dh, dtype=np.float64)
    adelta = np.rint(m[0] * xs * 1024).astype(np.int64)
    bdelta = np.rint(m[3] * xs * 1024).astype(np.int64)
    value = min(max(fill, 0), 255)
    border = np.array([value] * 3 + [0] if cn > 1 else [value], np.uint8)[:cn]
    # the source as rows of pixels with the border value appended as one more pixel, so
    # every tap is one gather
    pixels = np.concatenate([img.reshape(sh * sw, cn), border[None]])
    outside = sh * sw

    def gather(tx, ty):
        inside = (tx >= 0) & (tx < sw) & (ty >= 0) & (ty < sh)
        return pixels[np.where(inside, ty * sw + tx, outside)]

    if interp == _NEAREST:
        x0 = np.rint((m[1] * ys + m[2]) * 1024).astype(np.int64) + 512
        y0 = np.rint((m[4] * ys + m[5]) * 1024).astype(np.int64) + 512
        sx = np.clip((x0[:, None] + adelta[None, :]) >> 10, -32768, 32767)
        sy = np.clip((y0[:, None] + bdelta[None, :]) >> 10, -32768, 32767)
        return gather(sx, sy)
    x0 = np.rint((m[1] * ys + m[2]) * 1024).astype(np.int64) + 16
    y0 = np.rint((m[4] * ys + m[5]) * 1024).astype(np.int64) + 16
    fx = (x0[:, None] + adelta[None, :]) >> (10 - _TAB_BITS)
    fy = (y0[:, None] + bdelta[None, :]) >> (10 - _TAB_BITS)
    ix = np.clip(fx >> _TAB_BITS, -32768, 32767)
    iy = np.clip(fy >> _TAB_BITS, -32768, 32767)
    table = _REMAP_TABLES.get(interp)
    if table is None:
        table = _REMAP_TABLES[interp] = _remap_table(interp).astype(np.int32)
    weights = table[fy & (_TAB - 1), fx & (_TAB - 1)]          # dh, dw, k, k
    ksize = weights.shape[-1]
    total = np.zeros((dh, dw, cn), np.int32)    # |sums| < 255 * 2^15 * 2: int32 holds them
    for ky in range(ksize):
        ty = iy + ky - (ksize // 2 - 1)
        for kx in range(ksize):
            tx = ix + kx - (ksize // 2 - 1)
            total += gather(tx, ty).astype(np.int32) * weights[:, :, ky, kx, None]
    return np.clip((total + (1 << (_REMAP_BITS - 1))) >> _REMAP_BITS, 0, 255).astype(np.uint8)


def cv_copy_make_border(img, pad, fill):
    """``cv::copyMakeBorder`` with ``pad`` pixels of a constant on every side."""
    cn = img.shape[2]
    value = [min(max(fill, 0), 255)] * 3 + [0] if cn > 1 else [min(max(fill, 0), 255)]
    out = np.empty((img.shape[0] + 2 * pad, img.shape[1] + 2 * pad, cn), np.uint8)
    out[...] = np.asarray(value[:cn], np.uint8)
    out[pad:pad + img.shape[0], pad:pad + img.shape[1]] = img
    return out


def _simd_columns(width):
    """Which pixels of a row OpenCV's SSE2 colour conversion handles: rows go in blocks
    of 256 pixels, 8 at a time; the last ``n % 8`` of a block take the scalar code."""
    x = np.arange(width)
    block = np.minimum(width - x // 256 * 256, 256)
    return x % 256 < block // 8 * 8


def cv_bgr_to_hls(img):
    """``cvtColor(BGR2HLS)`` for uint8: H in [0, 180), L and S in [0, 255], through
    OpenCV's float formulas (its SSE2 and scalar code round S differently)."""
    inv = _F32(1.0 / 255.0)
    b, g, r = (img[..., k].astype(_F32) * inv for k in range(3))
    vmax = np.maximum(np.maximum(r, g), b)
    vmin = np.minimum(np.minimum(r, g), b)
    diff = (vmax - vmin).astype(_F32)
    total = (vmax + vmin).astype(_F32)
    light = (total * _F32(0.5)).astype(_F32)
    chroma = diff > _F32_EPS
    with np.errstate(divide='ignore', invalid='ignore'):
        simd = np.where(light < _F32(0.5), total, _F32(2) - total).astype(_F32)
        scalar = np.where(light < _F32(0.5), total, (_F32(2) - vmax) - vmin).astype(_F32)
        below = np.where(_simd_columns(img.shape[1]), simd, scalar)
        sat = (diff / below).astype(_F32)
        step = (_F32(60) / diff).astype(_F32)
        hue = np.where(vmax == r, (g - b) * step,
                       np.where(vmax == g, (b - r) * step + _F32(120),
                                (r - g) * step + _F32(240))).astype(_F32)
    hue = np.where(hue < 0, hue + _F32(360), hue).astype(_F32)
    hue = np.where(chroma, hue, _F32(0))
    sat = np.where(chroma, sat, _F32(0))
    out = np.stack([hue * _F32(0.5), light * _F32(255), sat * _F32(255)], axis=-1)
    return _saturate_u8(out.astype(_F32))


_SECTORS = np.array([[1, 3, 0], [1, 0, 2], [3, 0, 1], [0, 2, 1], [0, 1, 3], [2, 1, 0]])


def cv_hls_to_bgr(img):
    """``cvtColor(HLS2BGR)`` for uint8, through OpenCV's float formulas."""
    inv = _F32(1.0 / 255.0)
    hue = img[..., 0].astype(_F32)
    light = img[..., 1].astype(_F32) * inv
    sat = img[..., 2].astype(_F32) * inv
    p2 = np.where(light <= _F32(0.5), light * (_F32(1) + sat),
                  light + sat - light * sat).astype(_F32)
    p1 = (_F32(2) * light - p2).astype(_F32)
    h = (hue * _F32(6.0 / 180.0)).astype(_F32)
    h = np.where(h >= 6, h - _F32(6), h).astype(_F32)      # H <= 180 wraps at most once
    sector = np.floor(h).astype(np.int64)
    h = (h - sector.astype(_F32)).astype(_F32)
    tab = np.stack([p2, p1, p1 + (p2 - p1) * (_F32(1) - h), p1 + (p2 - p1) * h], -1)
    picks = _SECTORS[np.clip(sector, 0, 5)]
    bgr = np.take_along_axis(tab.astype(_F32), picks, axis=-1)
    gray = (sat == 0)[..., None]
    bgr = np.where(gray, light[..., None], bgr).astype(_F32)
    return _saturate_u8(bgr * _F32(255))


def cv_rgb_to_gray(img):
    """``cvtColor(RGB2GRAY)`` for uint8 (OpenCV's 14-bit fixed point), channel 0 read as
    red; HxWx1."""
    v = img.astype(np.int64)
    gray = (v[..., 0] * 4899 + v[..., 1] * 9617 + v[..., 2] * 1868 + (1 << 13)) >> 14
    return gray[..., None].astype(np.uint8)


def convert_scale(img, alpha, beta):
    """``Mat::convertTo(uint8, alpha, beta)``: float multiply-add, rounded to even."""
    return _saturate_u8(img.astype(_F32) * _F32(alpha) + _F32(beta))


def add_weighted(one, alpha, two, beta):
    """``cv::addWeighted(one, alpha, two, beta, 0)`` for uint8."""
    mixed = one.astype(_F32) * _F32(alpha) + two.astype(_F32) * _F32(beta) + _F32(0)
    return _saturate_u8(mixed)

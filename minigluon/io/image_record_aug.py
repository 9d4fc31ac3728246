"""The image side of ``ImageRecordIter``: decoding, MXNet's default augmenter and the
normalisation, computed as MXNet 1.x's C++ iterator computes them.

MXNet draws its random numbers from ``std::mt19937`` through libstdc++'s
distributions and transforms images with OpenCV 3.4; ``StdRandom`` and the ``cv_*``
kernels below reproduce both bit for bit (fixed-point resizing and warping, the float
HLS conversion, OpenCV's rounding), so a record augmented with the same seed gives the
same pixels as in MXNet.
"""
import math

import numpy as np

from ..base import MXNetError
from ..ndarray.image_codec import decode_raw

__all__ = ['StdRandom', 'AugmentParams', 'decode_record_image', 'augment',
           'draw_normalization', 'normalize',
           'cv_resize', 'cv_warp_affine', 'cv_bgr_to_hls', 'cv_hls_to_bgr']

_F32 = np.float32
_F32_EPS = np.finfo(np.float32).eps
_U32 = 1 << 32


# ---- std::mt19937 with libstdc++'s distributions -------------------------------------------
class StdRandom:
    """``std::mt19937`` seeded with ``seed``, drawn through libstdc++'s (GCC 4.8)
    distributions the way MXNet's C++ iterators use them.

    numpy's legacy ``RandomState(seed)`` is the same Mersenne Twister with the same
    seeding; each full-range 32-bit draw consumes one output.
    """

    def __init__(self, seed):
        self._state = np.random.RandomState(int(seed) % _U32)

    def reseed(self, seed):
        """Start again from ``seed`` (much cheaper than a new generator)."""
        self._state.seed(int(seed) % _U32)
        return self

    def copy(self):
        """An independent generator in the same state."""
        twin = StdRandom(0)
        twin._state.set_state(self._state.get_state())
        return twin

    def raw(self):
        """The next 32-bit output."""
        return int(self._state.randint(0, _U32, dtype=np.uint64))

    def raw_block(self, count):
        """The next ``count`` outputs as an int64 array."""
        return self._state.randint(0, _U32, size=count, dtype=np.uint64).astype(np.int64)

    def uniform_int(self, low, high):
        """``std::uniform_int_distribution(low, high)``: rejection then division."""
        span = high - low
        if span >= _U32 - 1:
            return self.raw() + low
        scaling = (_U32 - 1) // (span + 1)
        past = (span + 1) * scaling
        value = self.raw()
        while value >= past:
            value = self.raw()
        return value // scaling + low

    def canonical_float(self):
        """``std::generate_canonical<float, 24>``: one draw over 2^32, in float."""
        return _F32(self.raw()) / _F32(_U32)

    def uniform_float(self, low, high):
        """``std::uniform_real_distribution<float>(low, high)``."""
        low, high = _F32(low), _F32(high)
        return _F32(self.canonical_float() * _F32(high - low) + low)

    def coin(self):
        """``std::bernoulli_distribution(0.5)``: two draws make a double in [0, 1)."""
        first = float(self.raw())
        second = float(self.raw()) * 4294967296.0
        return (first + second) / 18446744073709551616.0 < 0.5

    def normal_pair(self, stddev):
        """Two draws of ``std::normal_distribution<float>(0, stddev)`` (Marsaglia's polar
        method, which makes them in pairs): the first returned, then the saved one."""
        one, two = _F32(1), _F32(2)
        while True:
            x = _F32(two * self.canonical_float() - one)
            y = _F32(two * self.canonical_float() - one)
            r2 = _F32(x * x + y * y)
            if not (r2 > 1 or r2 == 0):
                break
        mult = np.sqrt(_F32(_F32(-2) * np.log(r2)) / r2, dtype=_F32)
        return [_F32(y * mult) * _F32(stddev), _F32(x * mult) * _F32(stddev)]

    def shuffle(self, items):
        """``std::shuffle``: ``items`` (a list or an array) permuted in place.

        Fisher-Yates from the front, the partner of item ``i`` a ``uniform_int(0, i)``.
        The draws are made in blocks of exactly as many as still needed, so the
        generator ends where the one-at-a-time loop would; a rejected draw shifts the
        rest of its block to the next position.
        """
        n, i = len(items), 1
        unread = np.empty(0, np.int64)
        while i < n:
            want = min(n - i, 4096)
            if len(unread) < want:
                unread = np.concatenate([unread, self.raw_block(want - len(unread))])
            bounds = np.arange(i, i + want, dtype=np.int64) + 1
            scaling = (_U32 - 1) // bounds
            accepted = unread[:want] < bounds * scaling
            good = want if accepted.all() else int(np.argmin(accepted))
            partners = (unread[:good] // scaling[:good]).tolist()
            for k, j in enumerate(partners, i):
                items[k], items[j] = items[j], items[k]
            i += good
            unread = unread[good + (good < want):]
        return items


# ---- OpenCV 3.4's arithmetic ---------------------------------------------------------------
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


def _axis_taps(src_len, dst_len, scale, inv_scale, interp, ksize, clamp_edges):
    """Per output position: the first source tap and the fixed-point weights, as
    OpenCV's resize computes them for one axis."""
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
    fixed = np.rint(weights * _F32(_RESIZE_ONE)).astype(np.int64)
    taps = start[:, None] + np.arange(ksize) - (ksize // 2 - 1)
    return np.clip(taps, 0, src_len - 1), fixed


def _resize_nearest(img, dw, dh):
    sh, sw = img.shape[:2]
    xs = np.minimum(np.floor(np.arange(dw) * (1.0 / (dw / sw))).astype(np.int64), sw - 1)
    ys = np.minimum(np.floor(np.arange(dh) * (1.0 / (dh / sh))).astype(np.int64), sh - 1)
    return img[ys][:, xs]


def _resize_area_fast(img, dw, dh, sx, sy):
    sh, sw, cn = img.shape
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
    xi, xw = _area_table(sw, dw, scale_x)
    yi, yw = _area_table(sh, dh, scale_y)
    flat = img.reshape(sh, sw * cn)
    channel = np.arange(cn)
    rows = np.zeros((sh, dw * cn), _F32)
    for k in range(xi.shape[1]):
        columns = (xi[:, k, None] * cn + channel).reshape(-1)
        rows += np.take(flat, columns, axis=1).astype(_F32) * np.repeat(xw[:, k], cn)
    out = np.zeros((dh, dw * cn), _F32)
    for k in range(yi.shape[1]):
        out += yw[:, k, None] * rows[yi[:, k]]
    return _saturate_u8(out).reshape(dh, dw, cn)


def cv_resize(img, dw, dh, interp):
    """``cv::resize`` of an HxWxC uint8 image to ``dw`` x ``dh`` as OpenCV 3.4 does it.

    Parameters
    ----------
    img : numpy.ndarray
        HxWxC uint8.
    dw, dh : int
        Output width and height.
    interp : int
        0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos-4.

    Returns
    -------
    numpy.ndarray
        dh x dw x C uint8.
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
    xt, xw = _axis_taps(sw, dw, scale_x, inv_x, interp, ksize, ksize == 2)
    yt, yw = _axis_taps(sh, dh, scale_y, inv_y, interp, ksize, False)
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


def _convert_scale(img, alpha, beta):
    """``Mat::convertTo(uint8, alpha, beta)``: float multiply-add, rounded to even."""
    return _saturate_u8(img.astype(_F32) * _F32(alpha) + _F32(beta))


def _add_weighted(one, alpha, two, beta):
    """``cv::addWeighted(one, alpha, two, beta, 0)`` for uint8."""
    mixed = one.astype(_F32) * _F32(alpha) + two.astype(_F32) * _F32(beta) + _F32(0)
    return _saturate_u8(mixed)


# ---- decoding ------------------------------------------------------------------------------
def decode_record_image(payload, channels, what):
    """The image in a record's payload as OpenCV decodes it for MXNet's iterator: HxWxC
    uint8 in BGR(A) order, C = ``channels`` (1, 3 or 4; one channel is OpenCV's gray:
    libjpeg's luma for JPEGs, libpng's weights for colour PNGs)."""
    img = decode_raw(payload, {1: 0, 3: 1}.get(channels, -1), False, what)
    if img.shape[2] != channels:
        raise MXNetError('%s has %d channel(s) but data_shape asks for 4: an image with an '
                         'alpha channel (e.g. an RGBA PNG) is needed, or use data_shape with '
                         '3 channels' % (what, img.shape[2]))
    return img


# ---- MXNet's default augmenter -------------------------------------------------------------
class AugmentParams:
    """The parameters of MXNet's ``aug_default`` augmenter and of the normalisation, with
    MXNet's defaults; ``data_shape`` is (channels, height, width)."""

    FIELDS = {
        'resize': -1, 'rand_crop': False, 'random_resized_crop': False,
        'max_rotate_angle': 0, 'max_aspect_ratio': 0.0, 'min_aspect_ratio': None,
        'max_shear_ratio': 0.0, 'max_crop_size': -1, 'min_crop_size': -1,
        'max_random_scale': 1.0, 'min_random_scale': 1.0, 'max_random_area': 1.0,
        'min_random_area': 1.0, 'max_img_size': 1e10, 'min_img_size': 0.0,
        'brightness': 0.0, 'contrast': 0.0, 'saturation': 0.0, 'pca_noise': 0.0,
        'random_h': 0, 'random_s': 0, 'random_l': 0, 'rotate': -1, 'rotate_list': (),
        'fill_value': 255, 'inter_method': 1, 'pad': 0,
        # the normalisation done while copying into the batch
        'mirror': False, 'rand_mirror': False, 'mean_r': 0.0, 'mean_g': 0.0,
        'mean_b': 0.0, 'mean_a': 0.0, 'std_r': 1.0, 'std_g': 1.0, 'std_b': 1.0,
        'std_a': 1.0, 'scale': 1.0, 'max_random_contrast': 0.0,
        'max_random_illumination': 0.0,
    }

    def __init__(self, data_shape, **values):
        self.data_shape = tuple(int(d) for d in data_shape)
        for name, default in self.FIELDS.items():
            setattr(self, name, values.get(name, default))
        f32 = _F32
        if self.min_aspect_ratio is not None:
            self.aspect_range = (f32(self.min_aspect_ratio), f32(self.max_aspect_ratio))
        else:
            self.aspect_range = (f32(1) - f32(self.max_aspect_ratio),
                                 f32(1) + f32(self.max_aspect_ratio))
        lo, hi = self.aspect_range
        self.affine = (self.max_rotate_angle > 0 or self.max_shear_ratio > 0 or self.rotate > 0
                       or len(self.rotate_list) > 0 or f32(self.max_random_scale) != 1
                       or f32(self.min_random_scale) != 1
                       or (not self.random_resized_crop and (lo != 1 or hi != 1))
                       or f32(self.max_img_size) != f32(1e10)
                       or f32(self.min_img_size) != 0)
        if self.random_resized_crop and (
                self.min_random_scale != 1 or self.max_random_scale != 1
                or self.min_crop_size != -1 or self.max_crop_size != -1 or self.rand_crop):
            raise MXNetError('random_resized_crop=True conflicts with min_random_scale, '
                             'max_random_scale, min_crop_size, max_crop_size and rand_crop: '
                             'leave those at their defaults')


def _inter_method(params, old_w, old_h, new_w, new_h, rng):
    """MXNet's GetInterMethod: 9 picks by the size change, 10 draws one."""
    code = params.inter_method
    if code == 9:
        if new_w > old_w and new_h > old_h:
            return _CUBIC
        if new_w < old_w and new_h < old_h:
            return _AREA
        return _LINEAR
    if code == 10:
        return rng.uniform_int(0, 4)
    return code


def _affine(params, img, rng):
    """Rotation, shear, scale and aspect change in one warp."""
    f32 = _F32
    shear = f32(rng.canonical_float() * f32(params.max_shear_ratio) * f32(2)
                - f32(params.max_shear_ratio))
    angle = rng.uniform_int(-params.max_rotate_angle, params.max_rotate_angle)
    if params.rotate > 0:
        angle = params.rotate
    if params.rotate_list:
        angle = params.rotate_list[rng.uniform_int(0, len(params.rotate_list) - 1)]
    a = f32(math.cos(angle / 180.0 * math.pi))
    b = f32(math.sin(angle / 180.0 * math.pi))
    scale = ratio = f32(1)
    if not params.random_resized_crop:
        scale = f32(rng.canonical_float() * (f32(params.max_random_scale)
                                             - f32(params.min_random_scale))
                    + f32(params.min_random_scale))
        lo, hi = params.aspect_range
        ratio = f32(rng.canonical_float() * (hi - lo) + lo)
    hs = f32(f32(2) * scale / (f32(1) + ratio))
    ws = f32(ratio * hs)
    rows, cols = img.shape[:2]
    new_w = max(f32(params.min_img_size), min(f32(params.max_img_size), f32(scale * f32(cols))))
    new_h = max(f32(params.min_img_size), min(f32(params.max_img_size), f32(scale * f32(rows))))
    m00 = f32(f32(hs * a) - f32(f32(shear * b) * ws))
    m10 = f32(-b * ws)
    m01 = f32(f32(hs * b) + f32(f32(shear * a) * ws))
    m11 = f32(a * ws)
    center_w = f32(f32(m00 * f32(cols)) + f32(m01 * f32(rows)))
    center_h = f32(f32(m10 * f32(cols)) + f32(m11 * f32(rows)))
    m02 = f32((new_w - center_w) / f32(2))
    m12 = f32((new_h - center_h) / f32(2))
    matrix = np.array([[m00, m01, m02], [m10, m11, m12]], _F32)
    interp = _inter_method(params, cols, rows, int(new_w), int(new_h), rng)
    return cv_warp_affine(img, matrix, int(new_w), int(new_h), interp, params.fill_value)


def _random_resized_crop(params, img, rng):
    """Up to 10 tries of a random area and aspect ratio; None when none fits."""
    lo, hi = params.aspect_range
    area_lo, area_hi = _F32(params.min_random_area), _F32(params.max_random_area)
    rows, cols = img.shape[:2]
    area = _F32(rows * cols)
    _, out_h, out_w = params.data_shape
    for _ in range(10):
        rand_area = _F32(rng.canonical_float() * (area_hi - area_lo) + area_lo)
        ratio = _F32(rng.canonical_float() * (hi - lo) + lo)
        target = _F32(area * rand_area)
        y_area = int(round_half_away(float(np.sqrt(_F32(target / ratio)))))
        x_area = int(round_half_away(float(np.sqrt(_F32(target * ratio)))))
        if rng.canonical_float() > 0.5:
            y_area, x_area = x_area, y_area
        if y_area <= rows and x_area <= cols:
            y = rng.uniform_int(0, rows - y_area)
            x = rng.uniform_int(0, cols - x_area)
            interp = _inter_method(params, x_area, y_area, out_w, out_h, rng)
            return cv_resize(img[y:y + y_area, x:x + x_area], out_w, out_h, interp)
    return None


def round_half_away(value):
    """std::round: halves away from zero."""
    return math.floor(value + 0.5) if value >= 0 else -math.floor(-value + 0.5)


def _crop(params, img, rng):
    """The crop to data_shape: a random-size square, or a centred / random window."""
    _, out_h, out_w = params.data_shape
    rows, cols = img.shape[:2]
    if not params.random_resized_crop and (params.max_crop_size != -1
                                           or params.min_crop_size != -1):
        if not (cols >= params.max_crop_size and rows >= params.max_crop_size
                and params.max_crop_size >= params.min_crop_size):
            raise MXNetError('input image size %dx%d smaller than max_crop_size=%d (or '
                             'min_crop_size=%d > max_crop_size)'
                             % (cols, rows, params.max_crop_size, params.min_crop_size))
        size = rng.uniform_int(params.min_crop_size, params.max_crop_size)
        if size <= 0:
            raise MXNetError('the random crop size drawn from [min_crop_size, max_crop_size] '
                             '= [%d, %d] is %d: set both to positive sizes'
                             % (params.min_crop_size, params.max_crop_size, size))
        y, x = rows - size, cols - size
        if params.rand_crop:
            y = rng.uniform_int(0, y)
            x = rng.uniform_int(0, x)
        else:
            y, x = y // 2, x // 2
        interp = _inter_method(params, size, size, out_w, out_h, rng)
        return cv_resize(img[y:y + size, x:x + size], out_w, out_h, interp)
    interp = _inter_method(params, cols, rows, out_w, out_h, rng)
    if rows < out_h:
        new_cols = int(_F32(_F32(out_h) / _F32(rows) * _F32(cols)))
        img = cv_resize(img, new_cols, out_h, interp)
        rows, cols = img.shape[:2]
    if cols < out_w:
        new_rows = int(_F32(_F32(out_w) / _F32(cols) * _F32(rows)))
        img = cv_resize(img, out_w, new_rows, interp)
        rows, cols = img.shape[:2]
    if rows < out_h or cols < out_w:
        raise MXNetError('input image size %dx%d smaller than input shape %dx%d'
                         % (cols, rows, out_w, out_h))
    y, x = rows - out_h, cols - out_w
    if params.rand_crop:
        y = rng.uniform_int(0, y)
        x = rng.uniform_int(0, x)
    else:
        y, x = y // 2, x // 2
    return img[y:y + out_h, x:x + out_w]


def _color_jitter(params, img, rng):
    """Brightness, contrast and saturation in a random order (OpenCV's RGB2GRAY applied
    to BGR pixels, as MXNet does)."""
    f32 = _F32
    alpha_b = f32(1) + rng.uniform_float(-params.brightness, params.brightness)
    alpha_c = f32(1) + rng.uniform_float(-params.contrast, params.contrast)
    alpha_s = f32(1) + rng.uniform_float(-params.saturation, params.saturation)
    order = rng.shuffle([0, 1, 2])
    for step in order:
        if step == 0:
            img = _convert_scale(img, alpha_b, 0)
        elif step == 1:
            mean = float(cv_rgb_to_gray(img).mean(dtype=np.float64))
            img = _convert_scale(img, alpha_c, (1 - float(alpha_c)) * mean)
        else:
            gray = np.repeat(cv_rgb_to_gray(img), 3, axis=2)
            img = _add_weighted(img, alpha_s, gray, f32(1) - alpha_s)
    return img


def _hls_jitter(params, img, rng):
    f32 = _F32
    shifts = []
    for limit in (params.random_h, params.random_s, params.random_l):
        r = rng.canonical_float()
        r = f32(r + f32(4) * rng.canonical_float())
        r = f32(r / f32(5))
        shifts.append(int(f32(f32(r * f32(limit)) * f32(2)) - f32(limit)))
    h, s, l = shifts
    hls = cv_bgr_to_hls(img).astype(np.int64)
    hls += np.array([h, l, s])
    hls = np.clip(hls, 0, np.array([180, 255, 255]))
    return cv_hls_to_bgr(hls.astype(np.uint8))


# ImageNet's eigenvalues times eigenvectors, as MXNet stores them
_PCA = np.array([[55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
                 [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
                 [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203]], _F32)


def _pca_noise(params, img, rng):
    first = rng.normal_pair(params.pca_noise)
    third = rng.normal_pair(params.pca_noise)[0]
    alpha = [first[0], first[1], third]
    r, g, b = (_F32(_F32(_F32(v[0] * alpha[0]) + _F32(v[1] * alpha[1])) + _F32(v[2] * alpha[2]))
               for v in _PCA)
    noise = np.array([b, g, r], _F32)
    shifted = (img.astype(_F32) + noise).astype(np.int64)   # int += float truncates
    return np.clip(shifted, 0, 255).astype(np.uint8)


def augment(params, img, rng):
    """MXNet's ``aug_default`` on a decoded HxWxC BGR(A) image, drawing from ``rng`` in
    MXNet's order; returns the data_shape-sized image."""
    if params.resize != -1:
        rows, cols = img.shape[:2]
        if rows > cols:
            new_h, new_w = params.resize * rows // cols, params.resize
        else:
            new_h, new_w = params.resize, params.resize * cols // rows
        img = cv_resize(img, new_w, new_h, _inter_method(params, cols, rows, new_w, new_h, rng))
    if params.affine:
        if params.inter_method not in (1, 2, 3, 4, 9, 10):
            raise MXNetError('inter_method=%r cannot rotate, shear or scale an image: use '
                             '1, 2, 3, 4, 9 or 10' % (params.inter_method,))
        img = _affine(params, img, rng)
    if params.pad > 0:
        img = cv_copy_make_border(img, params.pad, params.fill_value)
    cropped = None
    if params.random_resized_crop:
        lo, hi = params.aspect_range
        if (params.max_random_area != 1 or params.min_random_area != 1 or lo != 1
                or hi != 1):
            cropped = _random_resized_crop(params, img, rng)
    img = cropped if cropped is not None else _crop(params, img, rng)
    if params.brightness > 0 or params.contrast > 0 or params.saturation > 0:
        img = _color_jitter(params, img, rng)
    if params.random_h != 0 or params.random_s != 0 or params.random_l != 0:
        img = _hls_jitter(params, img, rng)
    if params.pca_noise > 0:
        img = _pca_noise(params, img, rng)
    return img


def draw_normalization(params, rng, dtype, channels):
    """The per-record draws of the copy into the batch, in MXNet's order: whether to
    mirror, then (not for uint8) the contrast and illumination, folded with ``scale``
    and the standard deviations into per-channel ``(mirrored, mult, bias)``."""
    mirrored = bool((params.rand_mirror and rng.coin()) or params.mirror)
    if dtype == np.uint8:
        return mirrored, None, None
    f32 = _F32
    contrast = f32(f32(f32(f32(rng.canonical_float() * f32(params.max_random_contrast))
                           * f32(2)) - f32(params.max_random_contrast)) + f32(1))
    contrast = f32(contrast * f32(params.scale))
    illumination = f32(f32(f32(rng.canonical_float() * f32(params.max_random_illumination))
                           * f32(2)) - f32(params.max_random_illumination))
    illumination = f32(illumination * f32(params.scale))
    stds = [params.std_r, params.std_g, params.std_b, params.std_a][:channels]
    mult = np.array([f32(contrast / f32(s)) for s in stds], _F32)[:, None, None]
    bias = np.array([f32(illumination / f32(s)) for s in stds], _F32)[:, None, None]
    return mirrored, mult, bias


def normalize(params, img, draws, dtype, mean_img, out=None):
    """The batch entry for an augmented HxWxC BGR(A) image: CHW in RGB(A) order, for
    float32 ``(x - mean) * mult + bias`` (``mult`` = contrast * scale / std, ``bias`` =
    illumination * scale / std), for int8 ``x - round(mean)`` saturated, for uint8 the
    pixels; mirrored when drawn (``draws`` from ``draw_normalization``).

    ``mean_img`` (CxHxW float32, or None for the per-channel means) is the mean image;
    mirroring moves each pixel together with its mean, as MXNet does. The result goes
    to ``out`` when given (a row of the batch).
    """
    mirrored, mult, bias = draws
    cn = img.shape[2]
    chw = img.transpose(2, 0, 1)[[2, 1, 0, 3][:cn] if cn > 1 else [0]]
    if mirrored:
        chw = chw[:, :, ::-1]
        mean_img = mean_img[:, :, ::-1] if mean_img is not None else None
    if out is None:
        out = np.empty(chw.shape, dtype)
    means = [params.mean_r, params.mean_g, params.mean_b, params.mean_a][:cn]
    if dtype == np.uint8:
        out[...] = chw
    elif dtype == np.int8:
        mean = mean_img if mean_img is not None else np.array(means, _F32)[:, None, None]
        # std::round of the float32 mean: halves away from zero
        mean = np.asarray(mean, _F32).astype(np.float64)
        shift = np.where(mean >= 0, np.floor(mean + 0.5), -np.floor(0.5 - mean))
        out[...] = np.clip(chw.astype(np.int64) - shift.astype(np.int64), -128, 127)
    else:
        mean = mean_img if mean_img is not None else np.array(means, _F32)[:, None, None]
        np.subtract(chw, mean, out=out, dtype=_F32)
        out *= mult
        out += bias
    return out

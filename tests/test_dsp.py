"""conversion.core.host.dsp against torch.stft / torch.istft: host numpy, eager modules, Core AI."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conversion.core.host import dsp
from tests.roundtrip import run_through_coreai

# (n_fft, hop, win_length, center): Kokoro's generator, Chatterbox HiFT, a mel-sized one,
# a window shorter than n_fft, an odd n_fft, and center=False.
CASES = [
    (20, 5, 20, True),
    (16, 4, None, True),
    (1024, 256, None, True),
    (16, 4, 11, True),
    (15, 4, None, True),
    (32, 8, None, False),
]
IDS = [f"n{n}-h{h}-w{w}-{'c' if c else 'nc'}" for n, h, w, c in CASES]
TOL = 1e-5  # relative to the spectrum's (or signal's) scale; measured errors are ~1e-6


def _signal(*shape: int, seed: int = 0, dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _torch_window(n_fft: int, win_length: int | None, center: bool) -> torch.Tensor:
    # Hann's ends are zero, so without centre padding torch.istft fails NOLA: use Hamming.
    fn = torch.hann_window if center else torch.hamming_window
    return fn(win_length or n_fft, dtype=torch.float64)


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / np.abs(b).max())


def _wrapped(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Phase difference folded into (-pi, pi]: +pi and -pi are the same angle."""
    return np.angle(np.exp(1j * (a.astype(np.float64) - b)))


# ----------------------------------------------------------------------------- host


@pytest.mark.parametrize("periodic", [True, False])
def test_hann_window_matches_torch(periodic: bool) -> None:
    for n in (1, 16, 20, 1024):
        ref = torch.hann_window(n, periodic=periodic, dtype=torch.float64).numpy()
        np.testing.assert_allclose(dsp.hann_window(n, periodic), ref, atol=1e-15)


@pytest.mark.parametrize("n_fft,hop,win,center", CASES, ids=IDS)
def test_host_stft_matches_torch(n_fft: int, hop: int, win: int | None, center: bool) -> None:
    x = _signal(2, 3000)
    w = _torch_window(n_fft, win, center)
    ref = torch.stft(
        torch.from_numpy(x), n_fft, hop, win, w.float(), center=center, return_complex=True
    ).numpy()
    got = dsp.stft(x, n_fft, hop, win, w, center=center)
    assert got.shape == ref.shape and got.dtype == np.complex64
    assert _rel(got, ref) < TOL


@pytest.mark.parametrize("pad_mode", ["constant", "replicate", "reflect", "circular"])
def test_host_stft_options(pad_mode: str) -> None:
    x = _signal(2, 3, 400, dtype=np.float64)  # extra batch dim, float64 stays float64
    w = torch.hann_window(16, dtype=torch.float64)
    for normalized, onesided in [(False, True), (True, True), (False, False)]:
        ref = torch.stft(
            torch.from_numpy(x).reshape(6, 400),
            16,
            4,
            window=w,
            pad_mode=pad_mode,
            normalized=normalized,
            onesided=onesided,
            return_complex=True,
        ).numpy()
        got = dsp.stft(
            x, 16, 4, window=w, pad_mode=pad_mode, normalized=normalized, onesided=onesided
        )
        assert got.dtype == np.complex128
        assert _rel(got.reshape(ref.shape), ref) < 1e-12


@pytest.mark.filterwarnings("ignore:A window was not provided")
def test_host_stft_default_window_is_rectangular() -> None:
    x = _signal(1, 300)
    ref = torch.stft(torch.from_numpy(x), 16, 4, return_complex=True).numpy()
    assert _rel(dsp.stft(x, 16, 4), ref) < TOL


@pytest.mark.parametrize("n_fft,hop,win,center", CASES, ids=IDS)
def test_host_istft_matches_torch(n_fft: int, hop: int, win: int | None, center: bool) -> None:
    w = _torch_window(n_fft, win, center)
    spec = torch.stft(
        torch.from_numpy(_signal(2, 3000)),
        n_fft,
        hop,
        win,
        w.float(),
        center=center,
        return_complex=True,
    )
    ref = torch.istft(spec, n_fft, hop, win, w.float(), center=center).numpy()
    got = dsp.istft(spec.numpy(), n_fft, hop, win, w, center=center)
    assert got.shape == ref.shape and got.dtype == np.float32
    assert _rel(got, ref) < TOL


@pytest.mark.filterwarnings("ignore:The length of signal is shorter")
def test_host_istft_length_and_normalized() -> None:
    w = torch.hann_window(20, dtype=torch.float64)
    x = torch.from_numpy(_signal(1, 2400, dtype=np.float64))
    spec = torch.stft(x, 20, 5, window=w, normalized=True, return_complex=True)
    # Shorter, exact, and longer than the overlap-added signal (torch zero-pads the tail).
    for length in (1000, 2400, 2430):
        ref = torch.istft(spec, 20, 5, window=w, normalized=True, length=length).numpy()
        got = dsp.istft(spec.numpy(), 20, 5, window=w, normalized=True, length=length)
        assert got.shape == (1, length) and got.dtype == np.float64
        np.testing.assert_allclose(got, ref, atol=1e-10)


def test_host_istft_refuses_nola_like_torch() -> None:
    w = torch.hann_window(20)
    spec = torch.stft(torch.randn(1, 400), 20, 5, window=w, return_complex=True)
    with pytest.raises(RuntimeError):
        torch.istft(spec, 20, 5, window=w, center=False)
    with pytest.raises(ValueError, match="NOLA"):
        dsp.istft(spec.numpy(), 20, 5, window=w, center=False)


@pytest.mark.parametrize("n_fft,hop,win,center", CASES, ids=IDS)
def test_host_roundtrip(n_fft: int, hop: int, win: int | None, center: bool) -> None:
    x = _signal(3000, dtype=np.float64)
    w = _torch_window(n_fft, win, center)
    y = dsp.istft(
        dsp.stft(x, n_fft, hop, win, w, center=center),
        n_fft,
        hop,
        win,
        w,
        center=center,
        length=x.shape[-1],
    )
    # Without centre padding the tail past the last full frame is not reconstructed.
    n = x.shape[-1] if center else (x.shape[-1] - n_fft) // hop * hop + n_fft
    np.testing.assert_allclose(y[:n], x[:n], atol=1e-12)


def test_magnitude_phase_and_polar() -> None:
    spec = torch.stft(torch.randn(1, 500), 20, 5, window=torch.hann_window(20), return_complex=True)
    mag, phase = dsp.magnitude_phase(spec.numpy())
    np.testing.assert_allclose(mag, spec.abs().numpy(), rtol=1e-6, atol=1e-6)
    assert np.abs(_wrapped(phase, spec.angle().numpy())).max() < 1e-5
    np.testing.assert_allclose(dsp.polar(mag, phase), spec.numpy(), atol=1e-5)


# ----------------------------------------------------------------------------- eager modules


def _torch_stft(x: torch.Tensor, n_fft: int, hop: int, win: int | None, center: bool):
    w = _torch_window(n_fft, win, center).float()
    return torch.stft(x, n_fft, hop, win, w, center=center, return_complex=True), w


def _conv_stft(n_fft: int, hop: int, win: int | None, center: bool, **kw) -> dsp.ConvSTFT:
    w = _torch_window(n_fft, win, center)
    return dsp.ConvSTFT(n_fft, hop, win, window=w, center=center, **kw).eval()


@pytest.mark.parametrize("n_fft,hop,win,center", CASES, ids=IDS)
def test_conv_stft_matches_torch(n_fft: int, hop: int, win: int | None, center: bool) -> None:
    x = torch.from_numpy(_signal(2, 3000))
    ref, _ = _torch_stft(x, n_fft, hop, win, center)
    with torch.no_grad():
        real, imag = _conv_stft(n_fft, hop, win, center)(x)
    assert real.shape == imag.shape == ref.shape
    assert _rel(real.numpy() + 1j * imag.numpy(), ref.numpy()) < TOL


def test_conv_stft_hann_string_and_pad_modes() -> None:
    x = torch.from_numpy(_signal(1, 500))
    for pad_mode in ("reflect", "constant", "replicate"):
        ref = torch.stft(
            x, 20, 5, window=torch.hann_window(20), pad_mode=pad_mode, return_complex=True
        )
        real, imag = dsp.ConvSTFT(20, 5, pad_mode=pad_mode)(x)
        assert _rel(real.numpy() + 1j * imag.numpy(), ref.numpy()) < TOL


def test_conv_stft_mag_phase_matches_abs_angle() -> None:
    # A negative mean makes DC negative: torch.angle gives +pi there (FFT imag is +0), and
    # the module must too, not -pi, since Kokoro feeds the phase to a conv as is.
    x = torch.from_numpy(_signal(2, 2400) - 3.0)
    ref, _ = _torch_stft(x, 20, 5, 20, True)
    with torch.no_grad():
        mag, phase = dsp.ConvSTFT(20, 5, 20, mag_phase=True)(x)
    assert _rel(mag.numpy(), ref.abs().numpy()) < TOL
    edges = ref.angle().numpy()[:, [0, -1]]
    assert (np.abs(edges) > 3.0).any(), "test signal should exercise the +pi branch"
    np.testing.assert_allclose(phase.numpy()[:, [0, -1]], edges, atol=1e-6)
    # Elsewhere a near-real bin may land on either side of the branch cut: compare wrapped.
    assert np.abs(_wrapped(phase.numpy(), ref.angle().numpy())).max() < 1e-4


@pytest.mark.parametrize("overlap_add", ["zero_insert", "polyphase", "conv_transpose"])
@pytest.mark.parametrize("n_fft,hop,win,center", CASES, ids=IDS)
def test_conv_istft_matches_torch(
    n_fft: int, hop: int, win: int | None, center: bool, overlap_add: str
) -> None:
    spec, w = _torch_stft(torch.from_numpy(_signal(2, 3000)), n_fft, hop, win, center)
    ref = torch.istft(spec, n_fft, hop, win, w, center=center).numpy()
    frames = spec.shape[-1]
    for fixed in (None, frames):  # envelope in-graph, and precomputed
        m = dsp.ConvISTFT(
            n_fft, hop, win, window=w.double(), center=center, frames=fixed, overlap_add=overlap_add
        ).eval()
        with torch.no_grad():
            y = m(spec.real.contiguous(), spec.imag.contiguous()).numpy()
        assert y.shape == ref.shape
        assert _rel(y, ref) < TOL


@pytest.mark.filterwarnings("ignore:The length of signal is shorter")
def test_conv_istft_length_and_mag_phase() -> None:
    spec, w = _torch_stft(torch.from_numpy(_signal(1, 2400)), 20, 5, 20, True)
    for length in (1000, 2400, 2430):
        ref = torch.istft(spec, 20, 5, 20, w, length=length).numpy()
        for frames in (None, spec.shape[-1]):
            m = dsp.ConvISTFT(20, 5, 20, mag_phase=True, frames=frames, length=length)
            with torch.no_grad():
                y = m(spec.abs(), spec.angle()).numpy()
            assert y.shape == (1, length)
            assert _rel(y, ref) < TOL


def test_conv_istft_guards() -> None:
    with pytest.raises(ValueError, match="NOLA"):
        dsp.ConvISTFT(20, 5, center=False, frames=100)  # Hann's zero end at sample 0
    m = dsp.ConvISTFT(20, 5, frames=100)
    with pytest.raises(ValueError, match="100 frames"):
        m(torch.zeros(1, 11, 99), torch.zeros(1, 11, 99))


def test_modules_export_without_fft_or_complex_ops() -> None:
    spec = torch.zeros(1, 11, 41)
    for m, args in [
        (dsp.ConvSTFT(20, 5, mag_phase=True), (torch.zeros(1, 200),)),
        (dsp.ConvISTFT(20, 5), (spec, spec)),
        (dsp.ConvISTFT(20, 5, overlap_add="polyphase", frames=41), (spec, spec)),
    ]:
        ep = torch.export.export(m, args)
        for node in ep.graph.nodes:
            assert not any(s in str(node.target) for s in ("fft", "stft", "complex", "view_as"))
            val = node.meta.get("val")
            assert not (isinstance(val, torch.Tensor) and val.is_complex())


# ----------------------------------------------------------------------------- Core AI runtime

N_FFT, HOP, N = 20, 5, 2400  # Kokoro's generator STFT on 0.1 s of 24 kHz audio


@pytest.fixture(scope="module")
def kokoro_spec() -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.from_numpy(_signal(1, N, seed=7) - 0.5)
    return x, torch.stft(x, N_FFT, HOP, window=torch.hann_window(N_FFT), return_complex=True)


def test_coreai_conv_stft(kokoro_spec) -> None:
    x, ref = kokoro_spec
    out = run_through_coreai(dsp.ConvSTFT(N_FFT, HOP).eval(), {"x": x}, ["real", "imag"])
    assert _rel(out["real"] + 1j * out["imag"], ref.numpy()) < TOL


def test_coreai_conv_stft_mag_phase(kokoro_spec) -> None:
    x, ref = kokoro_spec
    m = dsp.ConvSTFT(N_FFT, HOP, mag_phase=True).eval()
    out = run_through_coreai(m, {"x": x}, ["mag", "phase"])
    assert _rel(out["mag"], ref.abs().numpy()) < TOL
    np.testing.assert_allclose(out["phase"][:, [0, -1]], ref.angle().numpy()[:, [0, -1]], atol=1e-6)
    assert np.abs(_wrapped(out["phase"], ref.angle().numpy())).max() < 1e-4


@pytest.mark.parametrize(
    "overlap_add,fixed",
    [("zero_insert", True), ("zero_insert", False), ("polyphase", True), ("conv_transpose", True)],
)
def test_coreai_conv_istft(kokoro_spec, overlap_add: str, fixed: bool) -> None:
    _, spec = kokoro_spec
    ref = torch.istft(spec, N_FFT, HOP, window=torch.hann_window(N_FFT)).numpy()
    frames = spec.shape[-1] if fixed else None
    m = dsp.ConvISTFT(N_FFT, HOP, frames=frames, overlap_add=overlap_add).eval()
    inputs = {"real": spec.real.contiguous(), "imag": spec.imag.contiguous()}
    out = run_through_coreai(m, inputs, ["audio"])
    assert out["audio"].shape == ref.shape
    assert _rel(out["audio"], ref) < TOL

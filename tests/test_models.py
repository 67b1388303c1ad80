"""CPU tests of the TRITON networks on tiny configurations (channels 8, 32x32 images, few texels)."""

from __future__ import annotations

import pytest
import torch

from benchmarks.model import kept_for_backward
from triton_s2r.models import (
    MultiScaleDiscriminator,
    NeuralTexture,
    RasterTexture,
    SimInput,
    StyleFreeGenerator,
    hint_labels,
    sample_label_textures,
    texel_centers,
    texture_projection,
    uvl_hint,
)
from triton_s2r.models.conv import Conv2d, reflect_pad

NUM_LABELS = 3


def make_gbuffer(batch: int = 2, size: int = 32, num_labels: int = NUM_LABELS, seed: int = 0):
    """Random per-pixel UVs and labels, about a quarter of them void."""
    generator = torch.Generator().manual_seed(seed)
    uv = torch.rand(batch, 2, size, size, generator=generator)
    label = torch.randint(0, num_labels + 1, (batch, size, size), generator=generator)
    return uv, label


def tiny_texture(**overrides) -> NeuralTexture:
    options = dict(num_labels=NUM_LABELS, num_frequencies=8, frequency_scale=2.0, hidden_channels=8)
    options.update(overrides)
    return NeuralTexture(**options)


def tiny_generator(in_channels: int, **overrides) -> StyleFreeGenerator:
    options = dict(base_channels=8, num_res_blocks=1, input_noise_std=0.0)
    options.update(overrides)
    return StyleFreeGenerator(in_channels, **options)


def per_label_loop(texture: NeuralTexture, uv, label):
    """Slow reference: run each label's MLP on every pixel and keep that label's pixels."""
    features = texture.encode(uv.permute(0, 2, 3, 1))
    out = torch.zeros(*label.shape, texture.out_channels)
    for index in range(texture.num_labels):
        hidden = features
        for layer, (weight, bias) in enumerate(zip(texture.weights, texture.biases, strict=True)):
            hidden = hidden @ weight[index] + bias[index, 0]
            hidden = torch.sigmoid(hidden) if layer == len(texture.weights) - 1 else torch.relu(hidden)
        out[label == index + 1] = hidden[label == index + 1]
    return out.permute(0, 3, 1, 2)


def test_neural_texture_shape_dtype_range_and_void():
    uv, label = make_gbuffer()
    out = tiny_texture(out_channels=5)(uv, label)
    assert out.shape == (2, 5, 32, 32) and out.dtype == torch.float32
    assert out.min() >= 0 and out.max() <= 1
    assert torch.all(out.permute(0, 2, 3, 1)[label == 0] == 0)
    assert torch.all(out.permute(0, 2, 3, 1)[label > 0] > 0)  # sigmoid is never exactly 0


@pytest.mark.parametrize("tile_size", [1, 5, 4096])
def test_neural_texture_batched_labels_match_per_label_loop(tile_size):
    uv, label = make_gbuffer()
    texture = tiny_texture(tile_size=tile_size)
    torch.testing.assert_close(texture(uv, label), per_label_loop(texture, uv, label), rtol=1e-5, atol=1e-6)


def test_neural_texture_all_void_gives_zeros_and_keeps_graph():
    uv, _ = make_gbuffer()
    texture = tiny_texture()
    out = texture(uv, torch.zeros(2, 32, 32, dtype=torch.int64))
    assert torch.all(out == 0)
    out.sum().backward()
    assert all(torch.all(weight.grad == 0) for weight in texture.weights)


def test_neural_texture_grey_start_is_uniform_and_learns():
    uv, label = make_gbuffer()
    texture = tiny_texture(output_init_scale=0.0)
    solid = label > 0
    assert torch.all(texture(uv, label).permute(0, 2, 3, 1)[solid] == 0.5)
    target = torch.rand(2, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    optimizer = torch.optim.Adam(texture.parameters(), lr=1e-2)
    for _ in range(20):
        optimizer.zero_grad()
        ((texture(uv, label) - target).abs().permute(0, 2, 3, 1)[solid]).mean().backward()
        optimizer.step()
    out = texture(uv, label).permute(0, 2, 3, 1)[solid]
    assert out.std() > 0.01  # no longer uniform: the gradient reached past the zeroed last layer
    with pytest.raises(ValueError, match="output_init_scale"):
        tiny_texture(output_init_scale=-1.0)


def test_neural_texture_is_deterministic_for_a_seed_and_state_dict_reproduces_it():
    uv, label = make_gbuffer()
    first, second, other = tiny_texture(seed=7), tiny_texture(seed=7), tiny_texture(seed=8)
    assert torch.equal(first(uv, label), second(uv, label))
    assert not torch.equal(first.frequencies, other.frequencies)
    assert "frequencies" in first.state_dict()
    other.load_state_dict(first.state_dict())
    assert torch.equal(other(uv, label), first(uv, label))


def test_neural_texture_eval_output_equals_train_output():
    uv, label = make_gbuffer()
    texture = tiny_texture()
    train_out = texture.train()(uv, label)
    assert torch.equal(texture.eval()(uv, label), train_out)


def saved_for_backward_bytes(texture: NeuralTexture, uv, label) -> tuple[int, torch.Tensor]:
    """Bytes of the distinct storages autograd keeps for the backward pass, and the output."""
    storages: dict[int, int] = {}
    with kept_for_backward(storages):
        out = texture(uv, label)
    return sum(storages.values()), out


@pytest.mark.parametrize("precision", [torch.float32, torch.bfloat16])
def test_recomputed_texture_keeps_almost_nothing_for_backward_and_gives_the_same_gradients(precision):
    uv, label = make_gbuffer()
    kept, recomputed = tiny_texture(seed=3), tiny_texture(seed=3, recompute=True)
    weights = torch.rand(1, 3, 32, 32, generator=torch.Generator().manual_seed(2))  # a loss that weighs pixels
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == torch.bfloat16):
        kept_bytes, kept_out = saved_for_backward_bytes(kept, uv, label)
        recomputed_bytes, recomputed_out = saved_for_backward_bytes(recomputed, uv, label)
    assert kept_out.dtype == recomputed_out.dtype == torch.float32
    assert torch.equal(kept_out, recomputed_out)
    (kept_out.float() * weights).sum().backward()
    (recomputed_out.float() * weights).sum().backward()
    for a, b in zip(kept.parameters(), recomputed.parameters(), strict=True):
        assert a.grad is not None and a.grad.abs().sum() > 0
        torch.testing.assert_close(a.grad, b.grad, rtol=0, atol=0)
    # Without recompute the layers' activations stay (pixels x hidden width each); with it the packed UVs,
    # the slots and the output's own graph: a small fraction.
    assert recomputed_bytes < kept_bytes / 5
    with torch.no_grad():  # no graph, nothing to recompute: the plain path
        assert torch.equal(recomputed(uv, label), tiny_texture(seed=3)(uv, label))


def test_bake_matches_exact_queries_at_texel_centres():
    texture = tiny_texture(tile_size=50)  # several bake chunks
    resolution = 12
    baked = texture.bake(resolution)
    assert baked.shape == (NUM_LABELS, 3, resolution, resolution)
    centres = texel_centers(resolution).permute(2, 0, 1).expand(NUM_LABELS, 2, resolution, resolution)
    label = torch.arange(1, NUM_LABELS + 1).view(-1, 1, 1).expand(-1, resolution, resolution)
    torch.testing.assert_close(texture(centres, label), baked, rtol=1e-5, atol=1e-6)
    baked_mode = tiny_texture(sampling="baked", bake_resolution=resolution)
    assert torch.equal(baked_mode(centres, label), baked)


def test_rows_follow_u_and_columns_follow_v():
    texture = tiny_texture()
    with torch.no_grad():
        texture.frequencies[1].zero_()  # the encoding, hence the texture, now depends on u only
    baked = texture.bake(16)
    assert baked.std(dim=-1).max() < 1e-6  # constant along columns (v)
    assert baked.std(dim=-2).min() > 1e-3  # varies along rows (u)

    raster = RasterTexture(num_labels=1, out_channels=1, resolution=4)
    with torch.no_grad():
        raster.levels[0].copy_(torch.arange(4.0).view(1, 1, 4, 1).expand(1, 1, 4, 4))  # value = row
    uv = torch.tensor([[0.625, 0.1], [0.625, 0.9], [0.125, 0.5]]).T.reshape(1, 2, 1, 3)
    out = raster(uv, torch.ones(1, 1, 3, dtype=torch.int64))
    torch.testing.assert_close(out.flatten(), torch.tensor([2.0, 2.0, 0.0]))


def test_raster_bilinear_texel_centres_border_clamp_and_no_label_leak():
    textures = torch.zeros(2, 1, 4, 4)
    textures[0, 0, 1, 2], textures[0, 0, 2, 2] = 1.0, 3.0
    textures[1] = 10.0
    # u = 0.375 / 0.625 are centres of rows 1 / 2; 0.5 lies halfway; v = 0.625 is column 2's centre.
    uv = torch.tensor([[0.375, 0.625], [0.625, 0.625], [0.5, 0.625], [0.0, 0.0], [1.0, 1.0]]).T.reshape(
        1, 2, 1, 5
    )
    out = sample_label_textures(textures, uv, torch.ones(1, 1, 5, dtype=torch.int64)).flatten()
    torch.testing.assert_close(out, torch.tensor([1.0, 3.0, 2.0, 0.0, 0.0]))  # label 2's 10s never leak in
    void = sample_label_textures(textures, uv, torch.zeros(1, 1, 5, dtype=torch.int64))
    assert torch.all(void == 0)


def test_raster_mip_levels_keep_initial_texture_and_all_receive_gradient():
    uv, label = make_gbuffer()
    plain = RasterTexture(NUM_LABELS, resolution=16, seed=3)
    mipped = RasterTexture(NUM_LABELS, resolution=16, num_mip_levels=3, seed=3)
    out = mipped(uv, label)
    assert torch.equal(out, plain(uv, label))
    out.square().sum().backward()
    for level in mipped.levels:
        assert level.grad.abs().sum() > 0 and torch.isfinite(level.grad).all()
    assert mipped.bake().shape == (NUM_LABELS, 3, 16, 16)
    with pytest.raises(ValueError, match="divisible"):
        RasterTexture(NUM_LABELS, resolution=12, num_mip_levels=4)


def test_labels_outside_the_label_set_raise():
    uv, label = make_gbuffer()
    with pytest.raises(ValueError, match="num_labels"):
        tiny_texture()(uv, label + NUM_LABELS)
    with pytest.raises(TypeError, match="int64"):
        RasterTexture(NUM_LABELS, resolution=8)(uv, label.int())


def test_uvl_hint_range_and_void():
    uv, label = make_gbuffer()
    hint = uvl_hint(uv, label, NUM_LABELS)
    assert hint.shape == (2, 3, 32, 32) and hint.min() >= -1 and hint.max() <= 1
    assert torch.all(hint.permute(0, 2, 3, 1)[label == 0] == -1)
    torch.testing.assert_close(hint[:, 2][label == NUM_LABELS], torch.ones(int((label == NUM_LABELS).sum())))


def test_hint_labels_read_back_the_labels_of_x_a():
    uv, label = make_gbuffer()
    for hint_multiplier in (1.0, 0.0):  # channel 5 holds the plain hint whatever the multipliers
        x_a = SimInput(NUM_LABELS, hint_multiplier=hint_multiplier)(torch.rand(2, 3, 32, 32), uv, label)
        assert torch.equal(hint_labels(x_a, NUM_LABELS), label)
    # A drawn image between the exact values rounds to the nearest id and clamps outside the range.
    drawn = torch.zeros(1, 6, 1, 3)
    drawn[0, 5, 0] = torch.tensor([-3.0, 0.1, 5.0])
    assert hint_labels(drawn, NUM_LABELS).tolist() == [[[0, 2, 3]]]


def test_onehot_labels_follow_x_a_as_one_channel_per_label():
    uv, label = make_gbuffer()
    texture = torch.rand(2, 3, 32, 32)
    scalar = SimInput(NUM_LABELS)(texture, uv, label)
    onehot_input = SimInput(NUM_LABELS, label_encoding="onehot")
    x_a = onehot_input(texture, uv, label)
    assert onehot_input.out_channels == 6 + NUM_LABELS and x_a.shape == (2, 6 + NUM_LABELS, 32, 32)
    torch.testing.assert_close(x_a[:, :6], scalar)  # the reference channels are unchanged
    for k in range(1, NUM_LABELS + 1):
        torch.testing.assert_close(x_a[:, 5 + k], (label == k).float() * 2 - 1)
    assert torch.equal(onehot_input.decode_labels(x_a), label)
    assert torch.equal(SimInput(NUM_LABELS).decode_labels(scalar), label)
    # A drawn image: the strongest label channel wins where one is above 0, void elsewhere.
    drawn = -torch.ones(1, 6 + NUM_LABELS, 1, 2)
    drawn[0, 6:, 0, 0] = torch.tensor([0.2, 0.7, -0.1])
    assert onehot_input.decode_labels(drawn).tolist() == [[[2, 0]]]
    with pytest.raises(ValueError, match="label_encoding"):
        SimInput(NUM_LABELS, label_encoding="embedding")


def test_without_the_uv_hint_only_the_texture_tells_where_a_pixel_lies() -> None:
    uv, label = make_gbuffer()
    texture = torch.rand(2, 3, 32, 32)
    with_uv = SimInput(NUM_LABELS)(texture, uv, label)
    without = SimInput(NUM_LABELS, uv_hint=False)(texture, uv, label)
    assert torch.equal(without[:, 3:5], -torch.ones_like(without[:, 3:5]))  # no u, v
    torch.testing.assert_close(without[:, 5], with_uv[:, 5])  # the label stays
    torch.testing.assert_close(without[:, :2], with_uv[:, :2] - (with_uv[:, 3:5] + 1))  # -1 in place of u, v
    moved = SimInput(NUM_LABELS, uv_hint=False)(texture, uv.flip(-1), label)  # other UVs, same texture and labels
    assert torch.equal(moved, without)


def test_without_the_label_hint_only_the_texture_tells_the_objects_apart() -> None:
    uv, label = make_gbuffer()
    texture = torch.rand(2, 3, 32, 32)
    with_label = SimInput(NUM_LABELS, uv_hint=False)(texture, uv, label)
    without = SimInput(NUM_LABELS, uv_hint=False, label_hint=False)(texture, uv, label)
    torch.testing.assert_close(without[:, 5], (label > 0).float() * 2 - 1)  # surface or void, no more
    torch.testing.assert_close(without[:, 2], with_label[:, 2] - with_label[:, 5] + without[:, 5])
    torch.testing.assert_close(without[:, [0, 1, 3, 4]], with_label[:, [0, 1, 3, 4]])
    relabelled = torch.where(label > 0, NUM_LABELS + 1 - label, label)  # other objects, the same textures
    assert torch.equal(SimInput(NUM_LABELS, uv_hint=False, label_hint=False)(texture, uv, relabelled), without)


def test_a_shared_label_hint_tells_the_objects_apart_by_their_textures_alone() -> None:
    uv, label = make_gbuffer()
    texture = torch.rand(2, 3, 32, 32)
    by_id = SimInput(NUM_LABELS, uv_hint=False)
    shared = SimInput(NUM_LABELS, uv_hint=False)
    shared.share_label_hint(torch.tensor([2, 3]))
    own, x_a = by_id(texture, uv, label), shared(texture, uv, label)
    objects = label >= 2
    assert torch.equal(x_a[~objects.unsqueeze(1).expand_as(x_a)], own[~objects.unsqueeze(1).expand_as(own)])
    value_2, value_3 = own[:, 5][label == 2][0], own[:, 5][label == 3][0]  # by id the two differ in the hint
    assert value_2 < value_3
    torch.testing.assert_close(x_a[:, 5][objects], torch.full_like(x_a[:, 5][objects], (value_2 + value_3) / 2))
    swapped = torch.where(objects, 5 - label, label)  # the two objects exchanged, the same textures
    assert torch.equal(shared(texture, uv, swapped), x_a)
    restored = SimInput(NUM_LABELS, uv_hint=False)
    restored.load_state_dict(shared.state_dict())  # saved with the weights: what a Translator loads
    assert torch.equal(restored(texture, uv, label), x_a)
    restored.load_state_dict({})  # a run saved before the buffer: every label hinted by its own id
    assert torch.equal(restored(texture, uv, label), own)
    with pytest.raises(ValueError, match=r"label ids \[0\] outside 1..3"):
        shared.share_label_hint(torch.tensor([0]))


def test_model_refuses_a_sim_generator_of_the_wrong_width() -> None:
    from triton_s2r.models.triton import TritonModel

    with pytest.raises(ValueError, match=r"generator_sim.in_channels .*9"):
        TritonModel(tiny_texture(), SimInput(NUM_LABELS, label_encoding="onehot"), tiny_generator(6),
                    tiny_generator(3))


def test_sim_input_layout_and_ablation_multipliers():
    uv, label = make_gbuffer()
    texture = tiny_texture(out_channels=4)(uv, label)
    hint, projection = uvl_hint(uv, label, NUM_LABELS), texture_projection(texture, label)
    full = SimInput(NUM_LABELS, texture_channels=4)
    x_a = full(texture, uv, label)
    assert x_a.shape == (2, full.out_channels, 32, 32) == (2, 7, 32, 32)
    torch.testing.assert_close(x_a[:, :3], hint + projection[:, :3])
    torch.testing.assert_close(x_a[:, 3:6], hint)
    torch.testing.assert_close(x_a[:, 6:], projection[:, 3:])
    no_texture = SimInput(NUM_LABELS, texture_channels=4, texture_multiplier=0.0)(texture, uv, label)
    torch.testing.assert_close(no_texture[:, :3], hint)
    texture_only = SimInput(NUM_LABELS, texture_channels=4, hint_multiplier=0.0)(texture, uv, label)
    torch.testing.assert_close(texture_only[:, :3], projection[:, :3])
    assert torch.all(projection.permute(0, 2, 3, 1)[label == 0] == 0)


def test_generator_shapes_content_code_and_range():
    x_a = torch.randn(2, 6, 32, 32)
    generator = tiny_generator(6)
    content = generator.encode(x_a)
    assert content.shape == (2, 8, 8, 8) and content.min() >= 0
    sim_to_real = tiny_generator(3).decode(content)
    assert sim_to_real.shape == (2, 3, 32, 32) and sim_to_real.abs().max() <= 1
    assert generator(x_a).shape == x_a.shape
    deeper = tiny_generator(3, num_downsample=3, content_channels=4)
    assert deeper.encode(torch.randn(1, 3, 32, 32)).shape == (1, 4, 4, 4)


def test_generator_deterministic_for_a_seed_in_eval_and_noisy_in_train():
    x = torch.randn(1, 3, 32, 32)
    torch.manual_seed(0)
    first = tiny_generator(3, input_noise_std=0.1)
    torch.manual_seed(0)
    second = tiny_generator(3, input_noise_std=0.1)
    assert torch.equal(first.eval()(x), second.eval()(x))
    first.train()
    assert not torch.equal(first(x), first(x))  # encoder input noise only while training


def test_discriminator_scales_and_patch_shapes():
    discriminator = MultiScaleDiscriminator(6, base_channels=8, num_layers=2, num_scales=3)
    logits = discriminator(torch.randn(2, 6, 32, 32))
    assert [tuple(scale.shape) for scale in logits] == [(2, 1, 8, 8), (2, 1, 4, 4), (2, 1, 2, 2)]
    assert all(torch.isfinite(scale).all() for scale in logits)


def test_bf16_autocast_texture_keeps_fourier_phases_in_float32():
    uv, label = make_gbuffer()
    texture = tiny_texture(frequency_scale=10.0)
    reference = texture(uv, label)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low_precision = texture(uv, label)
    torch.testing.assert_close(low_precision.float(), reference, atol=0.05, rtol=0)


@pytest.mark.parametrize(
    "texture_kind, texture_multiplier, hint_multiplier",
    [
        ("neural", 1.0, 1.0),  # TRITON
        ("neural", 0.0, 1.0),  # no texture: MUNIT-like
        ("neural", 2.0, 0.0),  # texture only
        ("neural_baked", 1.0, 1.0),
        ("raster", 1.0, 1.0),  # raster TRITON
        ("raster_mip", 1.0, 1.0),
    ],
)
def test_ablation_variants_build_and_translate(texture_kind, texture_multiplier, hint_multiplier):
    texture = {
        "neural": lambda: tiny_texture(),
        "neural_baked": lambda: tiny_texture(sampling="baked", bake_resolution=16),
        "raster": lambda: RasterTexture(NUM_LABELS, resolution=16),
        "raster_mip": lambda: RasterTexture(NUM_LABELS, resolution=16, num_mip_levels=3),
    }[texture_kind]()
    sim_input = SimInput(NUM_LABELS, texture_multiplier=texture_multiplier, hint_multiplier=hint_multiplier)
    uv, label = make_gbuffer()
    x_a = sim_input(texture(uv, label), uv, label)
    x_ab = tiny_generator(3).decode(tiny_generator(sim_input.out_channels).encode(x_a))
    assert x_ab.shape == (2, 3, 32, 32) and torch.isfinite(x_ab).all()
    x_ab.mean().backward()
    texture_grads = [parameter.grad for parameter in texture.parameters()]
    reaches_texture = any(grad is not None and grad.abs().sum() > 0 for grad in texture_grads)
    assert reaches_texture == (texture_multiplier != 0)


def test_neural_texture_splits_huge_inputs_without_changing_the_result(monkeypatch) -> None:
    """CUDA kernels index with 32 bits: large batches are evaluated in chunks, with the same values."""
    import triton_s2r.models.neural_texture as module

    texture = module.NeuralTexture(3, num_frequencies=8, hidden_channels=16)
    g = torch.Generator().manual_seed(0)
    uv, label = torch.rand(3, 2, 20, 30, generator=g), torch.randint(0, 4, (3, 20, 30), generator=g)
    whole = texture(uv, label)
    monkeypatch.setattr(module, "MAX_PIXELS_PER_CALL", 500)  # splits the batch
    torch.testing.assert_close(texture(uv, label), whole)
    monkeypatch.setattr(module, "MAX_PIXELS_PER_CALL", 100)  # splits the rows of one image
    torch.testing.assert_close(texture(uv[:1], label[:1]), whole[:1])


@pytest.mark.parametrize("padding", [(3, 3, 3, 3), (1, 1, 1, 1), (2, 0, 1, 3)])
def test_reflect_pad_from_slices_equals_torch_reflect_pad_in_values_and_gradients(padding):
    x = torch.randn(2, 3, 9, 11, requires_grad=True)
    expected = torch.nn.functional.pad(x, padding, mode="reflect")
    padded = reflect_pad(x, padding)
    assert torch.equal(padded, expected)
    upstream = torch.randn_like(expected)
    (grad_expected,) = torch.autograd.grad(expected, x, upstream)
    (grad,) = torch.autograd.grad(padded, x, upstream)
    torch.testing.assert_close(grad, grad_expected)


def test_compiled_reflect_conv_matches_eager_conv():
    """Compiled, the conv pads with reflect_pad; it must compute what nn.Conv2d computes eagerly."""
    torch.manual_seed(0)
    conv = Conv2d(3, 4, 3, 1, 1, padding_mode="reflect")
    reference = torch.nn.Conv2d(3, 4, 3, 1, 1, padding_mode="reflect")
    reference.load_state_dict(conv.state_dict())
    x = torch.randn(2, 3, 8, 8, requires_grad=True)
    compiled = torch.compile(conv, backend="aot_eager")  # traces the compiled branch without a C++ toolchain
    out, expected = compiled(x), reference(x)
    torch.testing.assert_close(out, expected)
    (grad,) = torch.autograd.grad(out.square().sum(), x)
    (grad_expected,) = torch.autograd.grad(expected.square().sum(), x)
    torch.testing.assert_close(grad, grad_expected)


def test_shade_keeps_the_image_on_void_and_shades_the_texture_on_surfaces() -> None:
    from triton_s2r.models.shading import shade

    uv, label = make_gbuffer()
    texture = tiny_texture()(uv, label).detach().requires_grad_(True)
    image, shading = torch.rand(2, 3, 32, 32) * 2 - 1, torch.rand(2, 1, 32, 32) * 2 - 1
    out = shade(image, shading, texture, label > 0)
    void = (label == 0).unsqueeze(1).expand_as(out)
    assert torch.equal(out[void], image[void])
    surface = ~void
    expected = 2 * texture * (1 + shading) - 1
    assert torch.allclose(out[surface], expected[surface])
    assert torch.equal(shade(image, torch.zeros_like(shading), texture, label > 0)[surface],
                       (2 * texture - 1)[surface])  # gain 1: the texture as it is
    out.sum().backward()
    assert texture.grad[surface].abs().sum() > 0 and texture.grad[void].abs().sum() == 0


def test_shaded_model_sends_the_translation_gradient_straight_to_the_texture() -> None:
    from triton_s2r.models.triton import TritonModel

    def model(shading_channels: int, texture_multiplier: float = 1.0) -> TritonModel:
        torch.manual_seed(0)
        sim_input = SimInput(NUM_LABELS, texture_multiplier=texture_multiplier)
        return TritonModel(tiny_texture(output_init_scale=0.0), sim_input,
                           tiny_generator(6), tiny_generator(3, extra_out_channels=shading_channels),
                           shading_channels=shading_channels)

    uv, label = make_gbuffer()
    shaded = model(1)
    x_ab = shaded(uv, label)
    assert x_ab.shape == (2, 3, 32, 32) and x_ab.min() >= -1 and x_ab.max() <= 3
    surface = (label > 0).unsqueeze(1).expand_as(x_ab)
    # The gradient of x_ab reaches the texture's last layer directly (through the encoder it would be tiny).
    x_ab[surface].mean().backward()
    assert shaded.texture.weights[-1].grad.abs().sum() > 0
    # x_a and the fixed-texture translation (for cycle, content and ℓUC) carry no gradient to the texture.
    batch = shaded.sample_texture(uv, label)
    x_a, projection = shaded.sim_image(batch)
    _, x_ab_fixed = shaded.decode_real(shaded.generator_sim.encode(x_a), batch)
    assert not x_a.requires_grad and projection.requires_grad
    shaded.zero_grad()
    x_ab_fixed.mean().backward()
    assert all(p.grad is None or not p.grad.any() for p in shaded.texture.parameters())
    with pytest.raises(ValueError, match="extra_out_channels"):
        TritonModel(tiny_texture(), SimInput(NUM_LABELS), tiny_generator(6), tiny_generator(3), shading_channels=1)
    with pytest.raises(ValueError, match="no texture"):
        model(1, texture_multiplier=0.0)


def test_drawn_labels_keep_the_decoders_image_and_are_saved_with_the_model() -> None:
    from triton_s2r.models.triton import TritonModel

    def model(shading_channels: int) -> TritonModel:
        torch.manual_seed(0)
        return TritonModel(tiny_texture(), SimInput(NUM_LABELS), tiny_generator(6),
                           tiny_generator(3, extra_out_channels=shading_channels), shading_channels=shading_channels)

    uv, label = make_gbuffer()
    shaded = model(1)
    assert shaded.shaded_labels.tolist() == [False] + [True] * NUM_LABELS
    drawn = torch.tensor([2, 3])
    assert bool(torch.isin(label, drawn).any()) and bool((label == 1).any())
    batch = shaded.sample_texture(uv, label)
    x_a, _ = shaded.sim_image(batch)
    content = shaded.generator_sim.encode(x_a)
    all_shaded = shaded.decode_real(content, batch)[0]
    shaded.draw_labels(drawn)
    x_ab = shaded.decode_real(content, batch)[0]
    image, _ = shaded.generator_real.decode_with_extra(content)
    keep = (torch.isin(label, drawn) | (label == 0)).unsqueeze(1).expand_as(x_ab)
    assert torch.equal(x_ab[keep], image[keep])  # G_B's image on void and the drawn labels
    assert torch.equal(x_ab[~keep], all_shaded[~keep])  # the other surfaces still shaded
    assert not torch.equal(x_ab[keep], all_shaded[keep])
    # Saved with the model; a state dict from before the buffer loads as every surface shaded.
    state = shaded.state_dict()
    fresh = model(1)
    fresh.load_state_dict(state)
    assert torch.equal(fresh.shaded_labels, shaded.shaded_labels)
    del state["shaded_labels"]
    fresh.load_state_dict(state)
    assert fresh.shaded_labels.tolist() == [False] + [True] * NUM_LABELS
    with pytest.raises(ValueError, match="outside 1"):
        shaded.draw_labels(torch.tensor([0]))
    with pytest.raises(ValueError, match="shading_channels > 0"):
        model(0).draw_labels(drawn)


@pytest.mark.parametrize("detach", [False, True])
def test_detached_texture_input_leaves_the_texture_to_the_projection(detach: bool) -> None:
    from triton_s2r.models.triton import TritonModel

    torch.manual_seed(0)
    model = TritonModel(tiny_texture(), SimInput(NUM_LABELS), tiny_generator(6), tiny_generator(3),
                        detach_texture_input=detach)
    uv, label = make_gbuffer()
    batch = model.sample_texture(uv, label)
    x_a, projection = model.sim_image(batch)
    texture = list(model.texture.parameters())
    on_translation = torch.autograd.grad(model.translate(x_a, batch).mean(), texture, allow_unused=True,
                                         retain_graph=True)
    assert any(g is not None and g.any() for g in on_translation) is not detach
    on_projection = torch.autograd.grad(projection.mean(), texture, allow_unused=True)  # ℓTR's path
    assert any(g is not None and g.any() for g in on_projection)


@pytest.mark.parametrize("num_scales", [1, 2, 3, 4])
def test_discriminator_takes_images_down_to_its_min_input_side(num_scales: int) -> None:
    from triton_s2r.models.discriminator import MultiScaleDiscriminator

    disc = MultiScaleDiscriminator(3, base_channels=4, num_layers=4, num_scales=num_scales)
    side = disc.min_input_side()
    assert [x.shape[-1] for x in disc(torch.zeros(1, 3, side, side))][-1] == 1  # the coarsest scale: one patch
    with pytest.raises(RuntimeError):  # one pixel less: reflect padding fails at the coarsest scale
        disc(torch.zeros(1, 3, side - 1, side - 1))

"""README's "Coming from MXNet" table tells the truth: every MXNet 1.9.1 public name of
a module its "Works as in 1.x" row claims exists in minigluon, or the table names it
(in backticks, globs allowed) in another row.

``MXNET_NAMES`` was generated once from MXNet 1.9.1: the top-level modules of ``mx``, the
callables of ``mx.nd``, and the public classes/functions defined in the other modules
(names merely imported there, such as ctypes helpers, left out).
"""
import fnmatch
import os
import re

import pytest

import minigluon as mx

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      'README.md')

MXNET_NAMES = {
    'mx': '''
        api attribute autograd base callback context contrib engine error executor
        executor_manager gluon image img init initializer io kv kvstore libinfo library
        log lr_scheduler metric mod model module mon monitor name nd ndarray ndarray_doc
        notebook np np_symbol npx numpy numpy_dispatch_protocol numpy_extension
        numpy_op_fallback numpy_op_signature onnx operator optimizer profiler random
        recordio registry rnd rnn rtc runtime sym symbol symbol_doc test_utils th torch
        tvmop util visualization viz
    '''.split(),
    'mx.nd': '''
        Activation BatchNorm BatchNorm_v1 BilinearSampler BlockGrad CTCLoss CachedOp
        Cast Concat Convolution Convolution_v1 Correlation Crop Custom Deconvolution
        Dropout ElementWiseSum Embedding Flatten FullyConnected GridGenerator GroupNorm
        IdentityAttachKLSparseReg InstanceNorm L2Normalization LRN LayerNorm LeakyReLU
        LinearRegressionOutput LogisticRegressionOutput MAERegressionOutput MakeLoss
        NDArray Pad Pooling Pooling_v1 RNN ROIPooling Reshape SVMOutput SequenceLast
        SequenceMask SequenceReverse SliceChannel Softmax SoftmaxActivation
        SoftmaxOutput SpatialTransformer SwapAxis UpSampling abs adam_update add add_n
        all_finite amp_cast amp_multicast arange arccos arccosh arcsin arcsinh arctan
        arctanh argmax argmax_channel argmin argsort array batch_dot batch_take
        broadcast_add broadcast_axes broadcast_axis broadcast_div broadcast_equal
        broadcast_greater broadcast_greater_equal broadcast_hypot broadcast_lesser
        broadcast_lesser_equal broadcast_like broadcast_logical_and broadcast_logical_or
        broadcast_logical_xor broadcast_maximum broadcast_minimum broadcast_minus
        broadcast_mod broadcast_mul broadcast_not_equal broadcast_plus broadcast_power
        broadcast_sub broadcast_to cast cast_storage cbrt ceil choose_element_0index
        clip col2im concat concatenate cos cosh crop ctc_loss cumsum degrees
        depth_to_space diag divide dot elemwise_add elemwise_div elemwise_mul
        elemwise_sub empty equal erf erfinv exp expand_dims expm1 eye
        fill_element_0index fix flatten flip floor from_dlpack from_numpy ftml_update
        ftrl_update full gamma gammaln gather_nd greater greater_equal hard_sigmoid
        histogram identity im2col imdecode khatri_rao lamb_update_phase1
        lamb_update_phase2 lesser lesser_equal linalg_det linalg_extractdiag
        linalg_extracttrian linalg_gelqf linalg_gemm linalg_gemm2 linalg_inverse
        linalg_makediag linalg_maketrian linalg_potrf linalg_potri linalg_slogdet
        linalg_sumlogdiag linalg_syrk linalg_trmm linalg_trsm linspace load
        load_frombuffer log log10 log1p log2 log_softmax logical_and logical_not
        logical_or logical_xor make_loss max max_axis maximum mean min min_axis minimum
        modulo moments moveaxis mp_lamb_update_phase1 mp_lamb_update_phase2
        mp_nag_mom_update mp_sgd_mom_update mp_sgd_update multi_all_finite multi_lars
        multi_mp_sgd_mom_update multi_mp_sgd_update multi_sgd_mom_update
        multi_sgd_update multi_sum_sq multiply nag_mom_update nanprod nansum negative
        norm normal not_equal one_hot onehot_encode ones ones_like pad pick power
        preloaded_multi_mp_sgd_mom_update preloaded_multi_mp_sgd_update
        preloaded_multi_sgd_mom_update preloaded_multi_sgd_update prod radians
        random_exponential random_gamma random_generalized_negative_binomial
        random_negative_binomial random_normal random_pdf_dirichlet
        random_pdf_exponential random_pdf_gamma random_pdf_generalized_negative_binomial
        random_pdf_negative_binomial random_pdf_normal random_pdf_poisson
        random_pdf_uniform random_poisson random_randint random_uniform
        ravel_multi_index rcbrt reciprocal relu repeat reset_arrays reshape reshape_like
        reverse rint rmsprop_update rmspropalex_update round rsqrt sample_exponential
        sample_gamma sample_generalized_negative_binomial sample_multinomial
        sample_negative_binomial sample_normal sample_poisson sample_uniform save
        scatter_nd sgd_mom_update sgd_update shape_array shuffle sigmoid sign
        signsgd_update signum_update sin sinh size_array slice slice_axis slice_like
        smooth_l1 softmax softmax_cross_entropy softmin softsign sort space_to_depth
        split split_v2 sqrt square squeeze stack stop_gradient subtract sum sum_axis
        swapaxes take tan tanh tile to_dlpack_for_read to_dlpack_for_write topk
        transpose true_divide trunc uniform unravel_index waitall where zeros zeros_like
    '''.split(),
    'mx.nd.random': '''
        NDArray exponential exponential_like gamma gamma_like
        generalized_negative_binomial generalized_negative_binomial_like multinomial
        negative_binomial negative_binomial_like normal normal_like poisson poisson_like
        randint randn shuffle uniform uniform_like
    '''.split(),
    'mx.autograd': '''
        Function backward get_symbol grad is_recording is_training mark_variables pause
        predict_mode record set_recording set_training train_mode
    '''.split(),
    'mx.gluon.nn': '''
        Activation AvgPool1D AvgPool2D AvgPool3D BatchNorm BatchNormReLU Block Conv1D
        Conv1DTranspose Conv2D Conv2DTranspose Conv3D Conv3DTranspose Dense Dropout ELU
        Embedding Flatten GELU GlobalAvgPool1D GlobalAvgPool2D GlobalAvgPool3D
        GlobalMaxPool1D GlobalMaxPool2D GlobalMaxPool3D GroupNorm HybridBlock
        HybridLambda HybridSequential InstanceNorm Lambda LayerNorm LeakyReLU MaxPool1D
        MaxPool2D MaxPool3D PReLU ReflectionPad2D SELU Sequential Swish SymbolBlock
    '''.split(),
    'mx.gluon.loss': '''
        CTCLoss CosineEmbeddingLoss HingeLoss HuberLoss KLDivLoss L1Loss L2Loss
        LogisticLoss Loss PoissonNLLLoss SDMLLoss SigmoidBCELoss
        SigmoidBinaryCrossEntropyLoss SoftmaxCELoss SoftmaxCrossEntropyLoss
        SquaredHingeLoss TripletLoss
    '''.split(),
    'mx.gluon.rnn': '''
        BidirectionalCell DropoutCell GRU GRUCell HybridRecurrentCell
        HybridSequentialRNNCell LSTM LSTMCell ModifierCell RNN RNNCell RecurrentCell
        ResidualCell SequentialRNNCell ZoneoutCell
    '''.split(),
    'mx.gluon.data': '''
        ArrayDataset BatchSampler DataLoader Dataset FilterSampler RandomSampler
        RecordFileDataset Sampler SequentialSampler SimpleDataset
    '''.split(),
    'mx.gluon.data.vision.transforms': '''
        Cast CenterCrop Compose CropResize Normalize RandomApply RandomBrightness
        RandomColorJitter RandomContrast RandomFlipLeftRight RandomFlipTopBottom
        RandomHue RandomLighting RandomResizedCrop RandomRotation RandomSaturation
        Resize Rotate ToTensor
    '''.split(),
    'mx.init': '''
        Bilinear Constant FusedRNN InitDesc Initializer LSTMBias Load MSRAPrelu Mixed
        Normal One Orthogonal Uniform Xavier Zero
    '''.split(),
    'mx.optimizer': '''
        AdaDelta AdaGrad Adam Adamax DCASGD FTML Ftrl LAMB LARS LBSGD NAG Nadam
        Optimizer RMSProp SGD SGLD Signum Test Updater ccSGD
    '''.split(),
    'mx.lr_scheduler': '''
        CosineScheduler FactorScheduler LRScheduler MultiFactorScheduler PolyScheduler
    '''.split(),
    'mx.metric': '''
        Accuracy Caffe CompositeEvalMetric CrossEntropy CustomMetric EvalMetric F1 Loss
        MAE MCC MSE NegativeLogLikelihood PCC PearsonCorrelation Perplexity RMSE
        TopKAccuracy Torch
    '''.split(),
    'mx.image': '''
        Augmenter BrightnessJitterAug CastAug CenterCropAug ColorJitterAug
        ColorNormalizeAug ContrastJitterAug CreateAugmenter CreateDetAugmenter
        CreateMultiRandCropAugmenter DetAugmenter DetBorrowAug DetHorizontalFlipAug
        DetRandomCropAug DetRandomPadAug DetRandomSelectAug ForceResizeAug
        HorizontalFlipAug HueJitterAug ImageDetIter ImageIter LightingAug RandomCropAug
        RandomGrayAug RandomOrderAug RandomSizedCropAug ResizeAug SaturationJitterAug
        SequentialAug center_crop color_normalize fixed_crop imdecode imread imresize
        imrotate random_crop random_rotate random_size_crop resize_short scale_down
    '''.split(),
    'mx.kv': '''
        KVStore KVStoreBase KVStoreServer create
    '''.split(),
    'mx.recordio': '''
        IRHeader MXIndexedRecordIO MXRecordIO pack pack_img unpack unpack_img
    '''.split(),
}

# the spelling of each module in the "Works as in 1.x" row ('mx' is the package itself:
# its modules are claimed by the row's module list as a whole)
CLAIMED_AS = {
    'mx.nd': '`mx.nd`', 'mx.nd.random': '`nd.random`', 'mx.autograd': '`autograd`',
    'mx.gluon.nn': '`gluon.nn`', 'mx.gluon.loss': '`gluon.loss`', 'mx.gluon.rnn': '`gluon.rnn`',
    'mx.gluon.data': '`gluon.data`',
    'mx.gluon.data.vision.transforms': '`gluon.data.vision.transforms`',
    'mx.init': '`mx.init`', 'mx.optimizer': '`mx.optimizer`',
    'mx.lr_scheduler': '`mx.lr_scheduler`', 'mx.metric': '`mx.metric`',
    'mx.image': '`mx.image`', 'mx.kv': '`mx.kv`', 'mx.recordio': '`mx.recordio`',
}


def _table_rows():
    with open(README, encoding='utf-8') as f:
        text = f.read()
    section = text[text.index('## Coming from MXNet'):]
    section = section[:section.index('\n## ', 1)]
    rows = {}
    for line in section.splitlines():
        match = re.match(r'\| \*\*(.+?)\*\* \| (.*) \|$', line)
        if match:
            rows[match.group(1)] = match.group(2)
    return rows


def _named_elsewhere(rows):
    """The backticked names of the rows other than "Works as in 1.x", without ``mx.`` in
    front, and their last dotted parts (``autograd.get_symbol`` names ``get_symbol``)."""
    names = set()
    for title, row in rows.items():
        if not title.startswith('Works'):
            for token in re.findall(r'`([^`]+)`', row):
                names.update((re.sub(r'^mx\.', '', token), token.rsplit('.', 1)[-1]))
    return names


def _missing(module):
    obj = mx if module == 'mx' else eval(module)  # pylint: disable=eval-used
    return [n for n in MXNET_NAMES[module] if not hasattr(obj, n)]


@pytest.mark.parametrize('module', sorted(MXNET_NAMES))
def test_works_claims_hold_or_the_gaps_are_named(module):
    rows = _table_rows()
    works = next(row for title, row in rows.items() if title.startswith('Works'))
    if module != 'mx' and CLAIMED_AS[module] not in works:
        pytest.skip('README does not claim %s works' % module)
    named = _named_elsewhere(rows)
    unexplained = [n for n in _missing(module)
                   if not any(fnmatch.fnmatchcase(n, pattern) for pattern in named)]
    assert not unexplained, (
        'README says %s works as in 1.x, but minigluon lacks %s; implement them or name '
        'them in another row of the "Coming from MXNet" table' % (module, unexplained))


def test_readme_says_numpy_2_drops_scalar_conversion():
    rows = _table_rows()
    assert "'%f' % arr.asnumpy()" in ' '.join(rows.values())

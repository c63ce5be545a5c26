"""Kaldi's GMM-HMM phone recognizer, trained and decoded by Kaldi's own C++ code through
the PyPI bindings `kaldi-hmm-gmm` (graphs with `kaldifst`), on our features archives.

A peer, not a model family of rhmmtk.models: the model is Kaldi's objects
(TransitionModel, ContextDependency, AmDiagGmm), decoded by Kaldi's decoder over a Kaldi
graph, so `rhmmtk decode` would need the bindings installed to read it. The peer writes
frame labellings in our alignment format instead, which `rhmmtk score` and `compare`
read like any system's.

Which Kaldi program each step stands for (steps/train_mono.sh and mkgraph.sh, as the
TIMIT recipe runs them: `prepare_lang.sh --num-sil-states 3 --position-dependent-phones
false --sil-prob 0`, so every phone, silence too, has 3 states and the lexicon maps
each phone to itself):

- gmm-init-mono: one Gaussian per pdf at the training frames' global mean and variance
  (Kaldi takes them from 10 utterances; we take all);
- compile-train-graphs: TrainingGraphCompiler with transition and self-loop scales 0
  (its defaults there: probabilities are added at each alignment, as they change);
- align-equal-compiled: kaldifst.equal_align;
- gmm-acc-stats-ali and gmm-est (`--mix-up`, `--power`, `--min-gaussian-occupancy 3`
  in the first pass): AccumAmDiagGmm, TransitionModel.mle_update,
  mle_am_diag_gmm_update, AmDiagGmm.split_by_count;
- gmm-align-compiled: add_transition_probs and align_utterance_wrapper with
  train_mono.sh's scales (transition 1, acoustic 0.1, self-loop 0.1) and beams (6, then
  10; retry at 4 x beam);
- mkgraph.sh: G (a phone bigram) composed with C (compose_context, width 1) and H
  (get_h_transducer), determinized and minimized, self-loops added at scale 0.1;
- decode.sh / score.sh: LatticeFasterDecoder (beam 13, lattice beam 6, max-active
  7000) at acoustic scale 1/LMWT, with the insertion penalty added to every phone arc
  of G (lattice-add-penalty's word insertion penalty; our words are phones).

The bigram is the add-k one train-cdhmm decodes with (cdhmm_train.bigram_logprobs), not
Kaldi TIMIT's IRSTLM bigram, so that the two systems differ only in their acoustic
models and search. Missing from the bindings: decision-tree building (acc-tree-stats,
cluster-phones, build-tree; only monophone context dependency can be made), so there
is no triphone stage.
"""
import dataclasses
import pickle
import time

import numpy as np

from ..errors import InputError
from ..io.archive import Archive
from ..io.text import write_alignment
from ..models.cdhmm_train import bigram_counts, bigram_logprobs
from ..models.frames import read_frames
from ..progress import log
from ..symbols import SymbolTable

INSTALL_HINT = "install it with scripts/install.sh (pip install kaldi-hmm-gmm==1.1.4 kaldifst)"
# train_mono.sh's realignment iterations
REALIGN_ITERS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 18, 20, 23, 26, 29, 32, 35, 38)


def bindings():
    """(kaldi_hmm_gmm, kaldifst), or an InputError saying how to install them."""
    try:
        import kaldi_hmm_gmm
        import kaldifst
    except ImportError as e:
        raise InputError(f"Kaldi's Python bindings are missing ({e.name}): {INSTALL_HINT}") from None
    return kaldi_hmm_gmm, kaldifst


@dataclasses.dataclass
class MonoOptions:
    """train_mono.sh's options (its defaults)."""

    num_iters: int = 40
    max_iter_inc: int = 30       # Gaussians are increased in iterations 1..max_iter_inc
    totgauss: int = 1000         # the target total number of Gaussians
    power: float = 0.25          # gmm-est --power: Gaussians per pdf ~ occupancy^power
    perturb_factor: float = 0.01
    min_count: float = 20.0      # gmm-est's: the fewest frames a split Gaussian may have
    lm_smooth: float = 0.5       # add-k of the phone bigram (train-cdhmm's default)


@dataclasses.dataclass
class DecodeOptions:
    lm_weight: float = 10.0      # LMWT: the acoustic scale is 1/LMWT
    insertion_penalty: float = 0.0   # added to the cost of every phone (Kaldi's sign)
    beam: float = 13.0
    lattice_beam: float = 6.0
    max_active: int = 7000


def topology_text(num_phones, trans=None):
    """Kaldi's HmmTopology text for phones 1..num_phones, 3 emitting states each.
    `trans` None: one entry, self-loop 0.75 and advance 0.25 (prepare_lang's initial
    values), the last state's advance leading out of the phone. `trans` (P, 3, 3)
    probabilities (stay, advance, exit) per phone and state (a converted CDHMM): one
    entry per phone, with an exit from every state whose exit probability is positive,
    which is rhmmtk.models.phoneloop's topology."""
    def state(j, stay, adv, ext):
        arcs = [(j, stay)]
        if j < 2:
            arcs.append((j + 1, adv))
        if ext > 0:
            arcs.append((3, ext))
        return (f"<State> {j} <PdfClass> {j} "
                + " ".join(f"<Transition> {d} {p!r}" for d, p in arcs) + " </State>")

    if trans is None:
        groups = [(range(1, num_phones + 1), [(0.75, 0.25, 0.0), (0.75, 0.25, 0.0),
                                              (0.75, 0.0, 0.25)])]
    else:
        groups = [([p + 1], [tuple(float(v) for v in trans[p, j]) for j in range(3)])
                  for p in range(num_phones)]
    out = ["<Topology>"]
    for phones, rows in groups:
        out += ["<TopologyEntry>", "<ForPhones> " + " ".join(map(str, phones)) + " </ForPhones>"]
        out += [state(j, *rows[j]) for j in range(3)]
        out += ["<State> 3 </State>", "</TopologyEntry>"]
    out.append("</Topology>")
    return "\n".join(out)


class KaldiMono:
    """A monophone system: the phone symbols (Kaldi phone i + 1 is labels[i]), Kaldi's
    topology text, transition model, tree and acoustic model, the phone bigram (log
    P(first), P(next | phone), P(end | phone)) and `info` (schedule, history, time)."""

    def __init__(self, labels, topo, trans_model, tree, am, lm, info=None):
        self.labels, self.topo, self.trans_model = labels, topo, trans_model
        self.tree, self.am, self.lm, self.info = tree, am, lm, dict(info or {})

    def phones_of(self, alignment):
        """Transition ids (T,) -> label ids (T,)."""
        tm = self.trans_model
        return np.array([tm.transition_id_to_phone(t) - 1 for t in alignment], dtype=np.int64)

    def states_of(self, alignment):
        """Transition ids (T,) -> (label id, HMM state) per frame: the pdf of a monophone
        tree is phone-major, pdf = (phone - 1) * 3 + state."""
        pdfs = np.array([self.trans_model.transition_id_to_pdf(t) for t in alignment])
        return pdfs // 3, pdfs % 3


def new_system(topo_text, khg):
    """A transition model and monophone tree of a topology (as gmm-init-mono)."""
    topo = khg.HmmTopology()
    topo.read(topo_text)
    tree = khg.monophone_context_dependency(
        phones=topo.phones, phone2num_pdf_classes=topo.get_phone_to_num_pdf_classes())
    return khg.TransitionModel(tree, topo), tree


def single_gaussian_am(khg, num_pdfs, mean, var):
    """gmm-init-mono's model: every pdf the one Gaussian (mean, var)."""
    g = khg.DiagGmm(nmix=1, dim=len(mean))
    g.set_weights(np.ones(1, dtype=np.float32))
    g.set_invvars_and_means(np.asarray(1.0 / var, np.float32)[None],
                            np.asarray(mean, np.float32)[None])
    g.compute_gconsts()
    am = khg.AmDiagGmm()
    for _ in range(num_pdfs):
        am.add_pdf(g)
    return am


def lexicon_fst(kfst, num_phones):
    """L: every phone is a word of its own (Kaldi TIMIT's lexicon), one looping state."""
    lines = [f"0 0 {p} {p}" for p in range(1, num_phones + 1)] + ["0"]
    fst = kfst.compile("\n".join(lines))
    kfst.arcsort(fst, sort_type="olabel")
    return fst


def utterance_phones(frames, u):
    """Kaldi phone ids (labels + 1) of utterance u's transcription (runs of labels)."""
    y = frames.y[frames.utterance(u)]
    keep = np.ones(len(y), dtype=bool)
    keep[1:] = y[1:] != y[:-1]
    return [int(p) + 1 for p in y[keep]]


def graph_compiler(trans_model, tree, num_phones):
    """compile-train-graphs' compiler: graphs without transition probabilities (align
    adds them, as they change every pass)."""
    khg, kfst = bindings()
    opts = khg.TrainingGraphCompilerOptions()
    opts.transition_scale = 0.0
    opts.self_loop_scale = 0.0
    return khg.TrainingGraphCompiler(trans_model=trans_model, ctx_dep=tree,
                                     lex_fst=lexicon_fst(kfst, num_phones), disambig_syms=[],
                                     opts=opts)


def training_graphs(trans_model, tree, frames):
    """compile-train-graphs: one graph per utterance."""
    gc = graph_compiler(trans_model, tree, len(frames.labels))
    return [gc.compile_graph_from_text(utterance_phones(frames, u)) for u in range(len(frames))]


def equal_alignments(kfst, graphs, lengths):
    """align-equal-compiled: a path of each graph spread evenly over its frames."""
    out = []
    for g, T in zip(graphs, lengths):
        ok, fst = kfst.equal_align(ifst=g, length=int(T), rand_seed=3, num_retries=10)
        ok2, seq = (kfst.get_linear_symbol_sequence(fst)[:2] if ok else (False, None))
        out.append(list(seq) if ok2 else None)
    return out


def align(khg, am, trans_model, graph, feats, beam, retry_beam, key="utt",
          acoustic_scale=0.1, self_loop_scale=0.1, transition_scale=1.0):
    """gmm-align-compiled on one utterance: (transition ids, log-likelihood) or (None,
    None) when no path is found even at the retry beam. The log-likelihood is Kaldi's
    (acoustic plus scaled transition scores, divided by the acoustic scale)."""
    fst = graph.copy()
    khg.add_transition_probs(trans_model=trans_model, transition_scale=transition_scale,
                             self_loop_scale=self_loop_scale, fst=fst)
    dec = khg.DecodableAmDiagGmmScaled(am=am, tm=trans_model, feats=feats, scale=acoustic_scale)
    cfg = khg.AlignConfig(beam=beam, retry_beam=retry_beam, careful=False)
    done, _, _, like, _, ali, _ = khg.align_utterance_wrapper(
        config=cfg, utt=key, acoustic_scale=acoustic_scale, fst=fst, decodable=dec,
        num_done=0, num_error=0, num_retried=0, tot_like=0.0, frame_count=0)
    return (list(ali), like) if done else (None, None)


def accumulate(khg, am, trans_model, feats, alignments):
    """gmm-acc-stats-ali: GMM statistics and transition counts of the alignments."""
    accs = khg.AccumAmDiagGmm()
    accs.init(model=am, flags=khg.GmmUpdateFlags.kGmmAll)
    tstats = trans_model.init_stats()
    for x, ali in zip(feats, alignments):
        if ali is None:
            continue
        for t, tid in enumerate(ali):
            tstats = trans_model.accumulate(prob=1.0, trans_id=tid, stats=tstats)
            accs.accumulate_for_gmm(model=am, data=x[t], gmm_index=trans_model.transition_id_to_pdf(tid),
                                    weight=1.0)
    return accs, tstats


def estimate(khg, am, trans_model, accs, tstats, mixup, options, min_occupancy=None):
    """gmm-est: the transition and GMM ML updates, then Gaussians split up to `mixup` in
    total by occupancy. Returns the average log-likelihood per frame of the statistics."""
    trans_model.mle_update(tstats, khg.MleTransitionUpdateConfig())
    gopts = khg.MleDiagGmmOptions()
    if min_occupancy is not None:
        gopts.min_gaussian_occupancy = min_occupancy
    like = accs.tot_log_like / max(accs.tot_count, 1.0)
    khg.mle_am_diag_gmm_update(config=gopts, amdiag_gmm_acc=accs,
                               flags=khg.str_to_gmm_flags("mvwt"), am_gmm=am)
    occs = np.array([accs.get_acc(i).occupancy.sum() for i in range(accs.num_accs)],
                    dtype=np.float32)
    am.split_by_count(state_occs=occs, target_components=int(mixup),
                      perturb_factor=options.perturb_factor, power=options.power,
                      min_count=options.min_count)
    return like


def train_mono(frames, options=None):
    """train_mono.sh on frames (rhmmtk.models.frames.Frames): the transcriptions are
    the runs of the frame labels, the frame boundaries are not used (Kaldi starts from
    equal alignments and realigns). Returns a KaldiMono."""
    khg, kfst = bindings()
    options = options or MonoOptions()
    t0 = time.time()
    P = len(frames.labels)
    topo = topology_text(P)
    tm, tree = new_system(topo, khg)
    am = single_gaussian_am(khg, tree.num_pdfs, frames.X.mean(0), frames.X.var(0))
    feats = [np.ascontiguousarray(frames.X[frames.utterance(u)], dtype=np.float32)
             for u in range(len(frames))]
    graphs = training_graphs(tm, tree, frames)
    alis = equal_alignments(kfst, graphs, [len(x) for x in feats])
    numgauss = am.num_gauss
    incgauss = (options.totgauss - numgauss) // options.max_iter_inc
    accs, tstats = accumulate(khg, am, tm, feats, alis)
    like = estimate(khg, am, tm, accs, tstats, numgauss, options, min_occupancy=3)
    history = [{"iteration": 0, "gaussians": am.num_gauss, "loglik_per_frame": like,
                "unaligned": sum(a is None for a in alis)}]
    beam = 6.0
    for x in range(1, options.num_iters):
        if x in REALIGN_ITERS:
            alis = [align(khg, am, tm, g, f, beam, 4 * beam, frames.keys[u])[0]
                    for u, (g, f) in enumerate(zip(graphs, feats))]
        accs, tstats = accumulate(khg, am, tm, feats, alis)
        like = estimate(khg, am, tm, accs, tstats, numgauss, options)
        if x <= options.max_iter_inc:
            numgauss += incgauss
        beam = 10.0
        history.append({"iteration": x, "gaussians": am.num_gauss, "loglik_per_frame": like,
                        "unaligned": sum(a is None for a in alis)})
        log.info("kaldi mono: iteration %d, %d Gaussians, log-likelihood %.4f per frame",
                 x, am.num_gauss, like)
    lm = bigram_logprobs(*bigram_counts(frames), options.lm_smooth)
    info = {"options": dataclasses.asdict(options), "history": history,
            "train_seconds": round(time.time() - t0, 1), "train_utts": len(frames),
            "train_frames": int(len(frames.y)), "gaussians": am.num_gauss}
    return KaldiMono(frames.labels, topo, tm, tree, am, lm, info)


def from_cdhmm(cdhmm):
    """An ML CDHMM with 3 states per phone (train-cdhmm's) as a Kaldi system with the same
    numbers: one topology entry per phone holding its (stay, advance, exit) probabilities
    (exits from every state: rhmmtk.models.phoneloop's topology) and one DiagGmm per
    state (weights, means, variances; Kaldi keeps them in float32)."""
    khg, _ = bindings()
    if cdhmm.gaussians is None or cdhmm.states != 3:
        raise InputError("only an ML CDHMM with 3 states per phone converts to Kaldi's topology")
    P = cdhmm.num_phones
    probs = np.exp(cdhmm.trans)
    probs[:, 2, 1] = 0.0             # the last state's advance does not exist
    topo = topology_text(P, probs)
    tm, tree = new_system(topo, khg)
    am = khg.AmDiagGmm()
    g = cdhmm.gaussians
    for p in range(P):
        for j in range(3):
            gmm = khg.DiagGmm(nmix=cdhmm.mixtures, dim=cdhmm.dim)
            gmm.set_weights(np.exp(g["logw"][p, j]).astype(np.float32))
            gmm.set_invvars_and_means((1.0 / g["variances"][p, j]).astype(np.float32),
                                      g["means"][p, j].astype(np.float32))
            gmm.compute_gconsts()
            am.add_pdf(gmm)
    return KaldiMono(cdhmm.labels, topo, tm, tree, am,
                     (cdhmm.lm_init, cdhmm.lm_bigram, cdhmm.lm_final), {"from": "cdhmm"})


def segment_graph(model, phone):
    """The training graph of a one-phone transcription (label id)."""
    gc = graph_compiler(model.trans_model, model.tree, len(model.labels))
    return gc.compile_graph_from_text([int(phone) + 1])


def grammar_fst(kfst, lm, insertion_penalty):
    """G: the phone bigram as an acceptor over phone ids, state q + 1 after phone q, with
    the insertion penalty on every phone arc (costs are -log P)."""
    init, big, final = lm
    P = len(init)
    lines = [f"0 {p + 1} {p + 1} {p + 1} {float(insertion_penalty - init[p])!r}" for p in range(P)]
    for q in range(P):
        lines += [f"{q + 1} {p + 1} {p + 1} {p + 1} {float(insertion_penalty - big[q, p])!r}"
                  for p in range(P)]
        lines.append(f"{q + 1} {float(-final[q])!r}")
    fst = kfst.compile("\n".join(lines))
    kfst.arcsort(fst, sort_type="ilabel")
    return fst


def decoding_graph(model, insertion_penalty=0.0):
    """mkgraph.sh: HCLG of the phone bigram (L is the identity: phones are the words)."""
    khg, kfst = bindings()
    clg, ilabels = kfst.compose_context(disambig_syms=[], context_width=model.tree.context_width,
                                        central_position=model.tree.central_position,
                                        ifst=grammar_fst(kfst, model.lm, insertion_penalty))
    kfst.arcsort(clg, sort_type="ilabel")
    ha, _ = khg.get_h_transducer(ilabel_info=ilabels, ctx_dep=model.tree,
                                 trans_model=model.trans_model,
                                 config=khg.HTransducerConfig(transition_scale=1.0))
    hclga = kfst.compose(ha, clg)
    kfst.determinize_star(hclga, use_log=True)
    kfst.minimize_encoded(hclga)
    return khg.add_self_loops(self_loop_scale=0.1, disambig_syms=[], reorder=True,
                              trans_model=model.trans_model, ifst=hclga)


def decode(model, utterances, options=None, graph=None):
    """Decode (key, frames (T, D)) pairs: dict key -> label ids (T,) of the best path.
    An utterance with no surviving path is an InputError naming it."""
    khg, _ = bindings()
    options = options or DecodeOptions()
    graph = graph if graph is not None else decoding_graph(model, options.insertion_penalty)
    cfg = khg.LatticeFasterDecoderConfig(max_active=options.max_active, beam=options.beam,
                                         lattice_beam=options.lattice_beam)
    decoder = khg.LatticeFasterDecoder(graph, cfg)
    out = {}
    for key, x in utterances:
        dec = khg.DecodableAmDiagGmmScaled(am=model.am, tm=model.trans_model,
                                           feats=np.ascontiguousarray(x, dtype=np.float32),
                                           scale=1.0 / options.lm_weight)
        ok, ali, _, _ = khg.decode_utterance_lattice_faster(
            decoder=decoder, decodable=dec, trans_model=model.trans_model, utt=key,
            allow_partial=True)
        if not ok or len(ali) != len(x):
            raise InputError("Kaldi's decoder found no path", None, key)
        out[key] = model.phones_of(ali)
    return out


# --- files ------------------------------------------------------------------------------
MAGIC = "rhmmtk-kaldi-mono-1"


def save(model, path):
    """The model as a pickle of Kaldi's objects (the bindings pickle them), written through
    the one writer."""
    from ..io.output import open_output

    with open_output(path, binary=True) as f:
        pickle.dump({"format": MAGIC, "labels": model.labels.symbols, "topo": model.topo,
                     "trans_model": model.trans_model, "tree": model.tree, "am": model.am,
                     "lm": model.lm, "info": model.info}, f)


def load(path):
    """A model written by `save` (InputError for anything else). It is a pickle, which
    can run code when read: load only model files you made."""
    bindings()   # unpickling needs them
    try:
        with open(path, "rb") as f:
            d = pickle.load(f)
    except OSError as e:
        raise InputError(f"cannot read the model: {e.strerror}", path) from None
    except Exception:
        raise InputError("not a Kaldi monophone model of rhmmtk.peers.kaldi_gmm", path) from None
    if not isinstance(d, dict) or d.get("format") != MAGIC:
        raise InputError("not a Kaldi monophone model of rhmmtk.peers.kaldi_gmm", path)
    return KaldiMono(SymbolTable(d["labels"]), d["topo"], d["trans_model"], d["tree"], d["am"],
                     d["lm"], d["info"])


def train_files(feats, ali, model_path, options=None):
    """Train on a features archive and a frame alignment (the phones modelled: those the
    alignment holds); write the model. Returns its info."""
    model = train_mono(read_frames(feats, ali), options)
    save(model, model_path)
    return model.info


def decode_files(model_path, feats, hyp_path, options=None):
    """Decode a features archive; write the frame labels as an alignment file."""
    model = load(model_path)
    with Archive(feats, expect_kind="features") as ar:
        utts = [(k, ar[k]) for k in ar.keys()]
    for k, x in utts:
        if x.ndim != 2 or x.shape[1] != model.am.dim:
            raise InputError(f"features of shape {x.shape}, the model needs (frames, "
                             f"{model.am.dim})", feats, k)
    out = decode(model, utts, options)
    write_alignment(hyp_path, {k: [model.labels.symbols[i] for i in out[k]] for k, _ in utts})

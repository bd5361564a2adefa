// Lattice generation for hybridasr: token passing over a const FST with a beam, --max-active /
// --min-active (an adaptive beam) and --lattice-beam pruning of the token graph every
// --prune-interval frames, the algorithm of Kaldi's LatticeFasterDecoder (written for this
// toolkit, not a copy of Kaldi's code). kaldi-decoder on PyPI only ships the *simple* lattice
// decoder (no --max-active), which keeps every token within the beam.
//
// The graph is given as the arrays of OpenFst's const layout (hybridasr.kaldi.fst
// .ConstFstArrays): states [S x 5] (final weight as float bits, first arc, number of arcs, ...)
// and arcs [N x 4] (ilabel, olabel, weight as float bits, next state). An emitting arc's input
// label k reads column k - 1 of the [T x P] matrix of scaled log-likelihoods (cost: minus it).
//
// The result is the raw state-level lattice: one state per surviving token, one arc per
// surviving link (emitting links go from frame t to t + 1, epsilon links stay in a frame),
// each with its graph and (scaled) acoustic cost; final costs on the last frame's tokens (the
// graph's final weights, or 0 for every token when no final state was reached).
//
// Decoding is incremental: Init (an utterance), Advance (more frames), the partial best path
// (each token keeps its best predecessor, Kaldi's LatticeFasterOnlineDecoder traceback), Finish.
//
// C interface for ctypes: hasr_lf_new / hasr_lf_init / hasr_lf_advance / hasr_lf_num_frames /
// hasr_lf_partial / hasr_lf_finish / hasr_lf_decode (all three at once) / hasr_lf_get /
// hasr_lf_free.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace {

const float kInf = std::numeric_limits<float>::infinity();

struct Token {
  float cost;     // best cost from the start to this token (graph + acoustic)
  float extra;    // how much worse than the best path the best path through it is (pruning)
  int32_t state;  // graph state
  int32_t links;  // first forward link, -1: none
  int32_t back;   // best predecessor's index (this frame if back_eps, else the previous), -1
  int32_t back_olabel;
  bool back_eps;
};

struct Link {
  int32_t next;  // index of the token in its frame (this frame for ilabel 0, else the next)
  int32_t ilabel, olabel;
  float graph, ac;
  int32_t tail;  // next link of the same token, -1: none
};

struct Options {
  float beam, lattice_beam, beam_delta, prune_scale;
  int32_t max_active, min_active, prune_interval;
};

class LatticeFaster {
 public:
  LatticeFaster(const uint32_t *states, const int32_t *arcs, int64_t num_states,
                const Options &opts)
      : states_(states), arcs_(arcs), opts_(opts), map_(num_states, -1) {}

  // begins an utterance (Kaldi's InitDecoding)
  void Init(int32_t start) {
    frames_.clear();
    links_.clear();
    last_final_.clear();
    ResetMap();
    dead_links_ = 0;
    reached_final_ = bad_label_ = false;
    status_ = 0;
    pruned_to_ = 0;
    start_ = start;
    frames_.emplace_back();
    FindOrAdd(0, start, 0.0f, nullptr, -1, 0, false);
    ProcessNonemitting(0, opts_.beam);
    ResetMap();
  }

  // decodes num_frames more frames (Kaldi's AdvanceDecoding); 0: ok; 1: no token survived;
  // 2: an input label beyond the matrix's columns; once not 0, it stays so
  int Advance(const float *ll, int32_t num_frames, int32_t num_cols) {
    if (status_ != 0) return status_;
    num_cols_ = num_cols;
    for (int32_t i = 0; i < num_frames; i++) {
      const int32_t t = NumFramesDecoded();
      frames_.emplace_back();
      float cutoff = ProcessEmitting(t, ll + static_cast<int64_t>(i) * num_cols);
      if (bad_label_) {
        ResetMap();
        return status_ = 2;
      }
      ProcessNonemitting(t + 1, cutoff);
      ResetMap();
      if (frames_[t + 1].empty()) return status_ = 1;
      if ((t + 1) % opts_.prune_interval == 0) {
        PruneActive(t + 1, pruned_to_, false);
        pruned_to_ = t + 1;  // frames before this have been pruned with a later frontier
      }
    }
    return 0;
  }

  // final pruning with the final weights (Kaldi's FinalizeDecoding); the codes of Advance
  int Finish() {
    if (status_ != 0) return status_;
    const int32_t num_frames = NumFramesDecoded();
    SetFinalExtras(num_frames);
    PruneActive(num_frames, 0, true);
    // every surviving token is reached from the start token (its cheapest incoming link
    // survives with it), which stays the first token of frame 0
    if (frames_[0].empty() || frames_[0][0].state != start_) return status_ = 1;
    status_ = 3;  // finished: a new utterance needs Init
    return 0;
  }

  int32_t NumFramesDecoded() const {
    return frames_.empty() ? 0 : static_cast<int32_t>(frames_.size()) - 1;
  }

  // the output labels (0s dropped) of the best token's chain of best predecessors, the best
  // token of the last decoded frame without final weights (Kaldi's partial best path);
  // returns how many there are, writing at most `cap` of them
  // (with `use_final`: the token best with its final weight, where a final state was reached:
  // the best path of the whole utterance at the search's own scale, Kaldi's GetBestPath)
  int64_t PartialBest(int32_t *out, int64_t cap, int32_t use_final) const {
    if (frames_.empty() || status_ == 1 || status_ == 2) return 0;
    int32_t f = static_cast<int32_t>(frames_.size()) - 1, i = -1;
    float best = kInf;
    if (use_final) {
      for (size_t k = 0; k < frames_[f].size(); k++) {
        const float c = frames_[f][k].cost + FinalWeight(frames_[f][k].state);
        if (c < best) { best = c; i = static_cast<int32_t>(k); }
      }
    }
    if (i < 0)
      for (size_t k = 0; k < frames_[f].size(); k++)
        if (i < 0 || frames_[f][k].cost < frames_[f][i].cost) i = static_cast<int32_t>(k);
    std::vector<int32_t> labels;
    int64_t steps = 0, limit = 0;
    for (const auto &fr : frames_) limit += fr.size();
    while (i >= 0 && steps++ <= limit) {  // the limit guards a (malformed) negative cycle
      const Token &tok = frames_[f][i];
      if (tok.back < 0) break;
      if (tok.back_olabel != 0) labels.push_back(tok.back_olabel);
      if (!tok.back_eps) f--;
      i = tok.back;
    }
    std::reverse(labels.begin(), labels.end());
    for (int64_t k = 0; k < static_cast<int64_t>(labels.size()) && k < cap; k++)
      out[k] = labels[k];
    return static_cast<int64_t>(labels.size());
  }

  bool reached_final() const { return reached_final_; }

  void Sizes(int64_t *num_states, int64_t *num_arcs) const {
    int64_t s = 0, a = 0;
    for (const auto &f : frames_) {
      s += f.size();
      for (const auto &tok : f)
        for (int32_t l = tok.links; l >= 0; l = links_[l].tail) a++;
    }
    *num_states = s;
    *num_arcs = a;
  }

  // states are numbered frame by frame; the start state is 0
  void Get(int32_t *src, int32_t *dst, int32_t *ilabel, int32_t *olabel, float *graph,
           float *ac, float *final_cost) const {
    std::vector<int64_t> offset(frames_.size() + 1, 0);
    for (size_t f = 0; f < frames_.size(); f++) offset[f + 1] = offset[f] + frames_[f].size();
    int64_t a = 0;
    for (size_t f = 0; f < frames_.size(); f++) {
      for (size_t i = 0; i < frames_[f].size(); i++) {
        const Token &tok = frames_[f][i];
        for (int32_t l = tok.links; l >= 0; l = links_[l].tail) {
          const Link &k = links_[l];
          src[a] = static_cast<int32_t>(offset[f] + i);
          dst[a] = static_cast<int32_t>(offset[k.ilabel ? f + 1 : f] + k.next);
          ilabel[a] = k.ilabel;
          olabel[a] = k.olabel;
          graph[a] = k.graph;
          ac[a] = k.ac;
          a++;
        }
        final_cost[offset[f] + i] = kInf;
      }
    }
    const auto &last = frames_.back();
    for (size_t i = 0; i < last.size(); i++)
      final_cost[offset[frames_.size() - 1] + i] = last_final_[i];
  }

 private:
  float FinalWeight(int32_t s) const {
    float w;
    std::memcpy(&w, &states_[5 * static_cast<int64_t>(s)], 4);
    return w;
  }
  float ArcWeight(int64_t a) const {
    float w;
    std::memcpy(&w, &arcs_[4 * a + 2], 4);
    return w;
  }

  // the token of `state` in frame f (the frame being built); `improved`: new or cheaper
  // (back, olabel, eps: the predecessor that gives `cost`, for the partial best path)
  int32_t FindOrAdd(int32_t f, int32_t state, float cost, bool *improved, int32_t back,
                    int32_t olabel, bool eps) {
    int32_t &slot = map_[state];
    std::vector<Token> &toks = frames_[f];
    if (slot < 0) {
      slot = static_cast<int32_t>(toks.size());
      toks.push_back(Token{cost, 0.0f, state, -1, back, olabel, eps});
      touched_.push_back(state);
      if (improved) *improved = true;
    } else if (cost < toks[slot].cost) {
      toks[slot].cost = cost;
      toks[slot].back = back;
      toks[slot].back_olabel = olabel;
      toks[slot].back_eps = eps;
      if (improved) *improved = true;
    } else if (improved) {
      *improved = false;
    }
    return slot;
  }

  void ResetMap() {
    for (int32_t s : touched_) map_[s] = -1;
    touched_.clear();
  }

  int32_t NewLink(const Link &k) {
    links_.push_back(k);
    return static_cast<int32_t>(links_.size() - 1);
  }

  void FreeLinks(Token *tok) {
    for (int32_t l = tok->links; l >= 0;) {
      int32_t next = links_[l].tail;
      dead_links_++;
      l = next;
    }
    tok->links = -1;
  }

  // the cutoff of frame t's tokens (beam, or tighter with --max-active, looser with
  // --min-active) and the beam the next frame's cutoff is estimated with
  float GetCutoff(const std::vector<Token> &toks, float *adaptive_beam) {
    float best = kInf;
    for (const auto &tok : toks) best = std::min(best, tok.cost);
    const float beam_cutoff = best + opts_.beam;
    *adaptive_beam = opts_.beam;
    const size_t n = toks.size();
    if (n <= static_cast<size_t>(opts_.min_active)) {  // keep them all, and their successors
      *adaptive_beam = kInf;
      return kInf;
    }
    if (n > static_cast<size_t>(opts_.max_active) || opts_.min_active > 0) {
      costs_.resize(n);
      for (size_t i = 0; i < n; i++) costs_[i] = toks[i].cost;
    }
    if (n > static_cast<size_t>(opts_.max_active)) {
      std::nth_element(costs_.begin(), costs_.begin() + opts_.max_active, costs_.end());
      const float max_active_cutoff = costs_[opts_.max_active];
      if (max_active_cutoff < beam_cutoff) {
        *adaptive_beam = max_active_cutoff - best + opts_.beam_delta;
        return max_active_cutoff;
      }
    }
    if (opts_.min_active > 0) {
      std::nth_element(costs_.begin(), costs_.begin() + opts_.min_active, costs_.end());
      const float min_active_cutoff = costs_[opts_.min_active];
      if (min_active_cutoff > beam_cutoff) {
        *adaptive_beam = min_active_cutoff - best + opts_.beam_delta;
        return min_active_cutoff;
      }
    }
    return beam_cutoff;
  }

  // frame t's tokens through emitting arcs into frame t + 1; returns frame t + 1's cutoff
  float ProcessEmitting(int32_t t, const float *ll) {
    float adaptive_beam;
    const float cutoff = GetCutoff(frames_[t], &adaptive_beam);
    float next_cutoff = kInf;
    // the best token's arcs give a first estimate of the next frame's cutoff
    int32_t best = -1;
    for (size_t i = 0; i < frames_[t].size(); i++)
      if (best < 0 || frames_[t][i].cost < frames_[t][best].cost) best = static_cast<int32_t>(i);
    if (best >= 0) {
      const Token &tok = frames_[t][best];
      const int64_t first = states_[5 * static_cast<int64_t>(tok.state) + 1];
      const int64_t end = first + states_[5 * static_cast<int64_t>(tok.state) + 2];
      for (int64_t a = first; a < end; a++) {
        const int32_t il = arcs_[4 * a];
        if (il == 0 || il > num_cols_) continue;
        const float c = tok.cost + ArcWeight(a) - ll[il - 1];
        next_cutoff = std::min(next_cutoff, c + adaptive_beam);
      }
    }
    const size_t n = frames_[t].size();
    for (size_t i = 0; i < n; i++) {
      const float tok_cost = frames_[t][i].cost;
      if (tok_cost > cutoff) continue;
      const int32_t state = frames_[t][i].state;
      const int64_t first = states_[5 * static_cast<int64_t>(state) + 1];
      const int64_t end = first + states_[5 * static_cast<int64_t>(state) + 2];
      for (int64_t a = first; a < end; a++) {
        const int32_t il = arcs_[4 * a];
        if (il == 0) continue;
        if (il > num_cols_) {
          bad_label_ = true;
          return kInf;
        }
        const float w = ArcWeight(a), ac = -ll[il - 1];
        const float c = tok_cost + w + ac;
        if (!(c <= next_cutoff)) continue;  // also drops NaN
        if (c + adaptive_beam < next_cutoff) next_cutoff = c + adaptive_beam;
        const int32_t nt = FindOrAdd(t + 1, arcs_[4 * a + 3], c, nullptr,
                                     static_cast<int32_t>(i), arcs_[4 * a + 1], false);
        const int32_t l = NewLink(Link{nt, il, arcs_[4 * a + 1], w, ac, frames_[t][i].links});
        frames_[t][i].links = l;
      }
    }
    return next_cutoff;
  }

  // epsilon arcs within frame f, until no token gets cheaper
  void ProcessNonemitting(int32_t f, float cutoff) {
    std::vector<Token> &toks = frames_[f];
    queue_.clear();
    for (size_t i = 0; i < toks.size(); i++) queue_.push_back(static_cast<int32_t>(i));
    while (!queue_.empty()) {
      const int32_t i = queue_.back();
      queue_.pop_back();
      const float cost = frames_[f][i].cost;
      if (cost > cutoff) continue;
      // reprocessed after getting cheaper: its epsilon links are made again
      FreeLinks(&frames_[f][i]);
      const int32_t state = frames_[f][i].state;
      const int64_t first = states_[5 * static_cast<int64_t>(state) + 1];
      const int64_t end = first + states_[5 * static_cast<int64_t>(state) + 2];
      for (int64_t a = first; a < end; a++) {
        if (arcs_[4 * a] != 0) continue;
        const float w = ArcWeight(a);
        const float c = cost + w;
        if (!(c < cutoff)) continue;
        bool improved;
        const int32_t nt = FindOrAdd(f, arcs_[4 * a + 3], c, &improved, i, arcs_[4 * a + 1],
                                     true);
        const int32_t l = NewLink(Link{nt, 0, arcs_[4 * a + 1], w, 0.0f, frames_[f][i].links});
        frames_[f][i].links = l;
        if (improved) queue_.push_back(nt);
      }
    }
  }

  // extra costs of the last frame's tokens with the final weights (Kaldi's final pruning)
  void SetFinalExtras(int32_t last) {
    std::vector<Token> &toks = frames_[last];
    last_final_.assign(toks.size(), kInf);
    float best = kInf;
    for (size_t i = 0; i < toks.size(); i++) {
      const float fw = FinalWeight(toks[i].state);
      if (fw != kInf) best = std::min(best, toks[i].cost + fw);
    }
    reached_final_ = best != kInf;
    if (!reached_final_) {  // no final state: every token ends a path (allow partial)
      for (const auto &tok : toks) best = std::min(best, tok.cost);
    }
    for (size_t i = 0; i < toks.size(); i++) {
      const float fw = reached_final_ ? FinalWeight(toks[i].state) : 0.0f;
      last_final_[i] = fw;
      toks[i].extra = fw == kInf ? kInf : toks[i].cost + fw - best;
      if (toks[i].extra > opts_.lattice_beam) toks[i].extra = kInf;
    }
    // epsilon links inside the last frame lead to other final candidates
    bool changed = true;
    while (changed) {
      changed = false;
      for (auto &tok : toks) {
        float e = tok.extra;
        for (int32_t l = tok.links; l >= 0; l = links_[l].tail) {
          const Link &k = links_[l];
          const Token &nt = toks[k.next];
          e = std::min(e, nt.extra + (tok.cost + k.graph - nt.cost));
        }
        if (e < tok.extra - 1e-6f) {
          tok.extra = e;
          changed = true;
        }
      }
    }
    for (size_t i = 0; i < toks.size(); i++)
      if (toks[i].extra > opts_.lattice_beam) {
        toks[i].extra = kInf;
        last_final_[i] = kInf;
      } else if (last_final_[i] != kInf && toks[i].cost + last_final_[i] - best >
                 opts_.lattice_beam) {
        last_final_[i] = kInf;  // lives through an epsilon link, not as an end
      }
    // the frame's own epsilon links: only those on a path within the lattice beam
    for (auto &tok : toks) {
      if (tok.extra == kInf) {
        FreeLinks(&tok);
        continue;
      }
      int32_t *prev = &tok.links;
      for (int32_t l = tok.links; l >= 0;) {
        Link &k = links_[l];
        const Token &nt = toks[k.next];
        const int32_t tail = k.tail;
        if (!(nt.extra + (tok.cost + k.graph - nt.cost) <= opts_.lattice_beam)) {
          *prev = tail;
          dead_links_++;
        } else {
          prev = &k.tail;
        }
        l = tail;
      }
    }
  }

  // the forward links of frame f's tokens against the extra costs of the tokens they reach;
  // returns whether any extra cost of frame f changed
  bool PruneForwardLinks(int32_t f, float delta) {
    bool any_changed = false, changed = true;
    std::vector<Token> &toks = frames_[f];
    std::vector<Token> *next = static_cast<size_t>(f + 1) < frames_.size() ? &frames_[f + 1]
                                                                           : nullptr;
    while (changed) {
      changed = false;
      // newest first: an epsilon link mostly leads to a token made after its source, whose
      // extra cost is then settled before the source's is computed (one sweep, not a chain)
      for (auto it = toks.rbegin(); it != toks.rend(); ++it) {
        Token &tok = *it;
        float e = kInf;
        int32_t *prev = &tok.links;
        for (int32_t l = tok.links; l >= 0;) {
          Link &k = links_[l];
          const Token &nt = k.ilabel ? (*next)[k.next] : toks[k.next];
          float le = nt.extra + ((tok.cost + k.graph + k.ac) - nt.cost);
          const int32_t tail = k.tail;
          if (!(le <= opts_.lattice_beam)) {  // also NaN, infinite
            *prev = tail;
            dead_links_++;
          } else {
            if (le < 0) le = 0;  // rounding
            e = std::min(e, le);
            prev = &k.tail;
          }
          l = tail;
        }
        if (std::fabs(e - tok.extra) > delta || (e == kInf) != (tok.extra == kInf)) {
          changed = true;
          any_changed = true;
        }
        tok.extra = e;
      }
    }
    return any_changed;
  }

  // drops frame f's dead tokens (no path to the frontier within the lattice beam) and
  // renumbers the links into the frame: frame f - 1's emitting links and f's own epsilon links
  void Compact(int32_t f) {
    std::vector<Token> &toks = frames_[f];
    renumber_.assign(toks.size(), -1);
    int32_t n = 0;
    for (size_t i = 0; i < toks.size(); i++)
      if (toks[i].extra != kInf) renumber_[i] = n++;
    if (n == static_cast<int32_t>(toks.size())) return;
    const bool last = static_cast<size_t>(f) + 1 == frames_.size() &&
                      last_final_.size() == toks.size();
    for (size_t i = 0; i < toks.size(); i++) {
      if (renumber_[i] < 0) {
        FreeLinks(&toks[i]);
      } else {
        toks[renumber_[i]] = toks[i];
        if (last) last_final_[renumber_[i]] = last_final_[i];
      }
    }
    toks.resize(n);
    if (last) last_final_.resize(n);
    for (auto &tok : toks) {
      for (int32_t l = tok.links; l >= 0; l = links_[l].tail)
        if (links_[l].ilabel == 0) links_[l].next = renumber_[links_[l].next];
      if (tok.back_eps && tok.back >= 0) tok.back = renumber_[tok.back];
    }
    if (f > 0)
      for (auto &tok : frames_[f - 1])
        for (int32_t l = tok.links; l >= 0; l = links_[l].tail)
          if (links_[l].ilabel != 0) links_[l].next = renumber_[links_[l].next];
    if (static_cast<size_t>(f) + 1 < frames_.size())
      for (auto &tok : frames_[f + 1])
        if (!tok.back_eps && tok.back >= 0) tok.back = renumber_[tok.back];
  }

  // prunes frames frontier - 1 .. 0 against the frontier's extra costs (0 while decoding: a
  // token there may still become the best; the final costs at the end), stopping at the
  // first frame before `pruned_to` whose successor did not change
  void PruneActive(int32_t frontier, int32_t pruned_to, bool final) {
    if (!final)
      for (auto &tok : frames_[frontier]) tok.extra = 0.0f;
    bool changed_next = true;
    for (int32_t f = frontier - 1; f >= 0; f--) {
      if (f < pruned_to && !changed_next && !final) break;
      // while decoding a frame is pruned again once its successor changed by more than
      // prune_scale * lattice_beam; the final pass settles every extra cost exactly
      changed_next = PruneForwardLinks(f, final ? 1e-5f : opts_.prune_scale * opts_.lattice_beam);
      Compact(f + 1);
    }
    if (final) Compact(0);
    if (dead_links_ * 2 > static_cast<int64_t>(links_.size())) CollectLinks();
  }

  // copies the live links into a new array, each token's together (pruned links are left
  // where they were, and a reused slot would scatter a token's links over memory)
  void CollectLinks() {
    std::vector<Link> live;
    live.reserve(links_.size() - dead_links_ + 1024);
    for (auto &f : frames_)
      for (auto &tok : f) {
        int32_t *prev = &tok.links;
        for (int32_t l = tok.links; l >= 0; l = links_[l].tail) {
          live.push_back(links_[l]);
          *prev = static_cast<int32_t>(live.size() - 1);
          prev = &live.back().tail;
        }
        *prev = -1;
      }
    links_.swap(live);
    dead_links_ = 0;
  }

  const uint32_t *states_;
  const int32_t *arcs_;
  Options opts_;
  int32_t num_cols_ = 0, start_ = 0, pruned_to_ = 0;
  int status_ = 3;  // 0: decoding; 1, 2: failed (Advance's codes); 3: none begun or finished
  bool bad_label_ = false, reached_final_ = false;
  std::vector<std::vector<Token>> frames_;
  std::vector<Link> links_;
  std::vector<int32_t> map_, touched_, queue_, renumber_;
  int64_t dead_links_ = 0;
  std::vector<float> costs_, last_final_;
};

}  // namespace

extern "C" {

void *hasr_lf_new(const uint32_t *states, const int32_t *arcs, int64_t num_states, float beam,
                  int32_t max_active, int32_t min_active, float lattice_beam,
                  int32_t prune_interval, float beam_delta, float prune_scale) {
  Options o{beam, lattice_beam, beam_delta, prune_scale, max_active, min_active,
            std::max(prune_interval, 1)};
  return new LatticeFaster(states, arcs, num_states, o);
}

void hasr_lf_init(void *d, int32_t start) { static_cast<LatticeFaster *>(d)->Init(start); }

int hasr_lf_advance(void *d, const float *ll, int32_t num_frames, int32_t num_cols) {
  return static_cast<LatticeFaster *>(d)->Advance(ll, num_frames, num_cols);
}

int32_t hasr_lf_num_frames(void *d) {
  return static_cast<LatticeFaster *>(d)->NumFramesDecoded();
}

int64_t hasr_lf_partial(void *d, int32_t *out, int64_t cap, int32_t use_final) {
  return static_cast<LatticeFaster *>(d)->PartialBest(out, cap, use_final);
}

int hasr_lf_finish(void *d, int64_t *num_states, int64_t *num_arcs, int32_t *reached_final) {
  auto *dec = static_cast<LatticeFaster *>(d);
  int rc = dec->Finish();
  *reached_final = dec->reached_final() ? 1 : 0;
  if (rc != 0) {
    *num_states = *num_arcs = 0;
    return rc;
  }
  dec->Sizes(num_states, num_arcs);
  return 0;
}

int hasr_lf_decode(void *d, int32_t start, const float *ll, int32_t num_frames,
                   int32_t num_cols, int64_t *num_states, int64_t *num_arcs,
                   int32_t *reached_final) {
  auto *dec = static_cast<LatticeFaster *>(d);
  dec->Init(start);
  int rc = dec->Advance(ll, num_frames, num_cols);
  if (rc != 0) {
    *reached_final = 0;
    *num_states = *num_arcs = 0;
    return rc;
  }
  return hasr_lf_finish(d, num_states, num_arcs, reached_final);
}

void hasr_lf_get(void *d, int32_t *src, int32_t *dst, int32_t *ilabel, int32_t *olabel,
                 float *graph, float *ac, float *final_cost) {
  static_cast<LatticeFaster *>(d)->Get(src, dst, ilabel, olabel, graph, ac, final_cost);
}

void hasr_lf_free(void *d) { delete static_cast<LatticeFaster *>(d); }

}  // extern "C"

// Pruned lattice determinization for hybridasr, its one determinizer (driven by
// hybridasr/decode/determinize_native.py: phones first, then words). Input: a lattice
// whose arcs carry a label (0: none), a graph and an acoustic cost and a string of
// transition-ids; finals with costs and strings. Output: the lattice determinized on the
// labels, each label sequence once with its best (total, then graph) cost and alignment, made
// best first within `beam` of the best path. Kaldi's LatticeWeight order, Kaldi's string
// residuals; the subsets are keyed on residual costs quantized to 1/1024.
//
// C interface: hasr_det_run / hasr_det_sizes / hasr_det_get / hasr_det_free.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

const double kInfD = std::numeric_limits<double>::infinity();
const double kQuant = 1.0 / 1024;

struct VecHash {
  size_t operator()(const std::vector<int64_t> &v) const {
    uint64_t h = 1469598103934665603ULL;
    for (int64_t x : v) {
      h ^= static_cast<uint64_t>(x) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
      h *= 1099511628211ULL;
    }
    return static_cast<size_t>(h);
  }
};

// transition-id strings as the nodes of a trie (a node is its parent string plus one tid):
// one node per distinct prefix, appending is a hash look-up, equal strings are equal ids.
// The (parent, tid) -> node table is open addressing (linear probing, at most half full):
// appending is most of the determinization's work.
class Strings {
 public:
  Strings() {
    parent_.push_back(-1);
    tid_.push_back(0);
    len_.push_back(0);
    Rehash(1 << 12);
  }
  int32_t Append(int32_t node, int64_t tid) {
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(node)) << 32) |
                         static_cast<uint32_t>(tid);
    size_t i = Slot(key);
    for (; keys_[i] != kEmpty; i = (i + 1) & mask_)
      if (keys_[i] == key) return vals_[i];
    const int32_t id = static_cast<int32_t>(parent_.size());
    parent_.push_back(node);
    tid_.push_back(static_cast<int32_t>(tid));
    len_.push_back(len_[node] + 1);
    keys_[i] = key;
    vals_[i] = id;
    if (2 * parent_.size() > keys_.size()) Rehash(2 * keys_.size());
    return id;
  }
  template <typename It>
  int32_t Extend(int32_t node, It begin, It end) {
    for (It i = begin; i != end; ++i) node = Append(node, *i);
    return node;
  }
  int32_t Intern(const std::vector<int64_t> &v) { return Extend(0, v.begin(), v.end()); }
  int32_t Length(int32_t id) const { return len_[id]; }
  // the string's tids, first to last
  void Get(int32_t id, std::vector<int64_t> *out) const {
    out->resize(len_[id]);
    for (int32_t i = len_[id] - 1; i >= 0; i--, id = parent_[id]) (*out)[i] = tid_[id];
  }
  std::vector<int64_t> Get(int32_t id) const {
    std::vector<int64_t> v;
    Get(id, &v);
    return v;
  }
  // its first n tids
  int32_t Prefix(int32_t id, int32_t n) const {
    while (len_[id] > n) id = parent_[id];
    return id;
  }

 private:
  static constexpr uint64_t kEmpty = ~0ULL;
  size_t Slot(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ULL) >> shift_);
  }
  void Rehash(size_t capacity) {  // a power of two
    std::vector<uint64_t> keys(capacity, kEmpty);
    std::vector<int32_t> vals(capacity, 0);
    keys_.swap(keys);
    vals_.swap(vals);
    mask_ = capacity - 1;
    shift_ = 64;
    for (size_t c = capacity; c > 1; c >>= 1) shift_--;
    for (size_t j = 0; j < keys.size(); j++) {
      if (keys[j] == kEmpty) continue;
      size_t i = Slot(keys[j]);
      while (keys_[i] != kEmpty) i = (i + 1) & mask_;
      keys_[i] = keys[j];
      vals_[i] = vals[j];
    }
  }

  std::vector<int32_t> parent_, tid_, len_;
  std::vector<uint64_t> keys_;
  std::vector<int32_t> vals_;
  size_t mask_ = 0;
  int shift_ = 64;
};

struct Arc {
  int32_t label, next;
  double graph, ac;
  int32_t str;
};

struct Lattice {
  int32_t start = -1;
  std::vector<std::vector<Arc>> arcs;
  std::vector<double> final_graph, final_ac;  // inf: not final
  std::vector<int32_t> final_str;
  int32_t AddState() {
    arcs.emplace_back();
    final_graph.push_back(kInfD);
    final_ac.push_back(0.0);
    final_str.push_back(0);
    return static_cast<int32_t>(arcs.size() - 1);
  }
  bool IsFinal(int32_t s) const { return final_graph[s] != kInfD; }
};

inline bool Better(double g1, double a1, double g2, double a2) {
  const double t1 = g1 + a1, t2 = g2 + a2;
  return t1 < t2 || (t1 == t2 && g1 < g2);
}

// states reachable from the start, sources first (-1 in `cycle` if there is a cycle)
std::vector<int32_t> TopologicalOrder(const Lattice &lat, bool *cycle) {
  std::vector<int32_t> order;
  *cycle = false;
  if (lat.start < 0) return order;
  std::vector<uint8_t> state(lat.arcs.size(), 0);
  std::vector<std::pair<int32_t, size_t>> stack{{lat.start, 0}};
  state[lat.start] = 1;
  while (!stack.empty()) {
    auto &top = stack.back();
    const int32_t s = top.first;
    if (top.second < lat.arcs[s].size()) {
      const int32_t n = lat.arcs[s][top.second++].next;
      if (state[n] == 1) {
        *cycle = true;
        return {};
      }
      if (state[n] == 0) {
        state[n] = 1;
        stack.emplace_back(n, 0);
      }
    } else {
      state[s] = 2;
      order.push_back(s);
      stack.pop_back();
    }
  }
  std::reverse(order.begin(), order.end());
  return order;
}

// arcs and finals on a path within `beam` of the best; states renumbered topologically
Lattice Prune(const Lattice &lat, double beam, bool *cycle) {
  Lattice out;
  std::vector<int32_t> order = TopologicalOrder(lat, cycle);
  if (order.empty()) return out;
  const size_t n = lat.arcs.size();
  std::vector<double> alpha(n, kInfD), beta(n, kInfD);
  alpha[lat.start] = 0;
  for (int32_t s : order) {
    if (alpha[s] == kInfD) continue;
    for (const Arc &a : lat.arcs[s]) {
      const double c = alpha[s] + a.graph + a.ac;
      if (c < alpha[a.next]) alpha[a.next] = c;
    }
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int32_t s = *it;
    double b = lat.IsFinal(s) ? lat.final_graph[s] + lat.final_ac[s] : kInfD;
    for (const Arc &a : lat.arcs[s]) b = std::min(b, a.graph + a.ac + beta[a.next]);
    beta[s] = b;
  }
  if (beta[lat.start] == kInfD) return out;
  const double limit = beta[lat.start] + beam;
  std::vector<int32_t> id(n, -1);
  for (int32_t s : order)
    if (alpha[s] + beta[s] <= limit) id[s] = out.AddState();
  out.start = 0;
  for (int32_t s : order) {
    if (id[s] < 0) continue;
    for (const Arc &a : lat.arcs[s])
      if (id[a.next] >= 0 && alpha[s] + a.graph + a.ac + beta[a.next] <= limit)
        out.arcs[id[s]].push_back(Arc{a.label, id[a.next], a.graph, a.ac, a.str});
    if (lat.IsFinal(s) && alpha[s] + lat.final_graph[s] + lat.final_ac[s] <= limit) {
      out.final_graph[id[s]] = lat.final_graph[s];
      out.final_ac[id[s]] = lat.final_ac[s];
      out.final_str[id[s]] = lat.final_str[s];
    }
  }
  return out;
}

struct Elem {
  int32_t state;
  double g, a;
  int32_t str;
};

class Determinizer {
 public:
  Determinizer(const Lattice &lat, Strings *strings, double beam, int64_t max_states)
      : lat_(lat), strings_(strings), beam_(beam), max_states_(max_states) {}

  // 0: ok; 3: more than max_states states
  int Run(Lattice *out) {
    out_ = out;
    if (lat_.start < 0) return 0;
    BuildClosures();
    Backward();
    limit_ = beta_[lat_.start] + beam_;
    out_->start = Reach(OfSubset({Elem{lat_.start, 0.0, 0.0, 0}}), 0.0);
    if (too_large_) return 3;
    std::vector<uint8_t> expanded;
    while (!heap_.empty()) {
      const int32_t sid = heap_.top().second;
      heap_.pop();
      if (static_cast<size_t>(sid) < expanded.size() && expanded[sid]) continue;
      if (expanded.size() <= static_cast<size_t>(sid)) expanded.resize(sid + 1, 0);
      expanded[sid] = 1;
      Expand(sid);
      if (too_large_) return 3;
    }
    return 0;
  }

 private:
  struct Cell {  // a transition-id string as a chain: tid, then the rest
    int64_t tid;
    int32_t rest;
  };
  struct Closure {
    int32_t state;
    double g, a;
    int32_t cell;  // -1: empty
  };

  // word-less closures of every state, computed once from the last state back
  void BuildClosures() {
    const size_t n = lat_.arcs.size();
    memo_.assign(n, {});
    std::vector<int32_t> pos(n, -1);
    for (int64_t s = static_cast<int64_t>(n) - 1; s >= 0; s--) {
      std::vector<Closure> &m = memo_[s];
      bool useful = lat_.IsFinal(static_cast<int32_t>(s));
      for (const Arc &a : lat_.arcs[s]) useful = useful || a.label != 0;
      if (useful) m.push_back(Closure{static_cast<int32_t>(s), 0.0, 0.0, -1});
      for (const Arc &arc : lat_.arcs[s]) {
        if (arc.label) continue;
        for (const Closure &c : memo_[arc.next]) {
          const double g2 = arc.graph + c.g, a2 = arc.ac + c.a;
          int32_t &p = pos[c.state];
          if (p >= 0 && !Better(g2, a2, m[p].g, m[p].a)) continue;
          int32_t cell = c.cell;
          strings_->Get(arc.str, &tids_);
          for (auto it = tids_.rbegin(); it != tids_.rend(); ++it) {
            cells_.push_back(Cell{*it, cell});
            cell = static_cast<int32_t>(cells_.size() - 1);
          }
          if (p < 0) {
            p = static_cast<int32_t>(m.size());
            m.push_back(Closure{c.state, g2, a2, cell});
          } else {
            m[p] = Closure{c.state, g2, a2, cell};
          }
        }
      }
      for (const Closure &c : m) pos[c.state] = -1;
    }
  }

  void Backward() {
    const size_t n = lat_.arcs.size();
    beta_.assign(n, kInfD);
    for (int64_t s = static_cast<int64_t>(n) - 1; s >= 0; s--) {
      double b = lat_.IsFinal(static_cast<int32_t>(s))
                     ? lat_.final_graph[s] + lat_.final_ac[s] : kInfD;
      for (const Arc &a : lat_.arcs[s]) b = std::min(b, a.graph + a.ac + beta_[a.next]);
      beta_[s] = b;
    }
  }

  int32_t Concat(int32_t x, int32_t y) {
    if (y == 0) return x;
    if (x == 0) return y;
    strings_->Get(y, &buf_);
    return strings_->Extend(x, buf_.begin(), buf_.end());
  }

  // the closure of a subset: for each state reached, the best over the elements
  std::vector<Elem> OfSubset(const std::vector<Elem> &elems) {
    struct Best {
      int32_t state;
      double g, a;
      int32_t t0, cell;
    };
    std::vector<Best> best;
    for (const Elem &e : elems) {
      for (const Closure &c : memo_[e.state]) {
        const double g2 = e.g + c.g, a2 = e.a + c.a;
        auto it = where_.find(c.state);
        if (it == where_.end()) {
          where_.emplace(c.state, static_cast<int32_t>(best.size()));
          best.push_back(Best{c.state, g2, a2, e.str, c.cell});
        } else if (Better(g2, a2, best[it->second].g, best[it->second].a)) {
          best[it->second] = Best{c.state, g2, a2, e.str, c.cell};
        }
      }
    }
    where_.clear();
    std::vector<Elem> out;
    out.reserve(best.size());
    for (const Best &b : best) {
      int32_t str = b.t0;
      for (int32_t c = b.cell; c >= 0; c = cells_[c].rest) str = strings_->Append(str, cells_[c].tid);
      out.push_back(Elem{b.state, b.g, b.a, str});
    }
    return out;
  }

  // the output state of a subset reached at `cost`; -1 outside the beam
  int32_t Reach(std::vector<Elem> elems, double cost) {
    std::sort(elems.begin(), elems.end(),
              [](const Elem &x, const Elem &y) { return x.state < y.state; });
    key_.clear();
    for (const Elem &e : elems) {
      key_.push_back(e.state);
      key_.push_back(static_cast<int64_t>(std::nearbyint(e.g / kQuant)));
      key_.push_back(static_cast<int64_t>(std::nearbyint(e.a / kQuant)));
      key_.push_back(e.str);
    }
    auto it = subsets_.find(key_);
    const int32_t found = it == subsets_.end() ? -1 : it->second;
    double completion;
    if (found < 0) {
      completion = kInfD;
      for (const Elem &e : elems) completion = std::min(completion, e.g + e.a + beta_[e.state]);
    } else {
      completion = rest_[found];
    }
    if (cost + completion > limit_) return -1;
    if (found < 0) {
      if (static_cast<int64_t>(subsets_.size()) >= max_states_) {
        too_large_ = true;
        return -1;
      }
      const int32_t sid = out_->AddState();
      subsets_.emplace(key_, sid);
      elems_of_.push_back(std::move(elems));
      forward_.push_back(cost);
      rest_.push_back(completion);
      heap_.emplace(cost + completion, sid);
      return sid;
    }
    if (cost < forward_[found]) {  // a better way in, found before it was expanded
      forward_[found] = cost;
      heap_.emplace(cost + completion, found);
    }
    return found;
  }

  void Expand(int32_t sid) {
    const std::vector<Elem> elems = elems_of_[sid];
    const double here = forward_[sid];
    bool has_final = false;
    double fg = 0, fa = 0;
    int32_t fs = 0;
    std::vector<std::pair<int32_t, std::vector<Elem>>> by_word;
    std::unordered_map<int64_t, std::pair<int32_t, int32_t>> at;  // (word, state) -> slot
    std::unordered_map<int32_t, int32_t> word_slot;
    for (const Elem &e : elems) {
      if (lat_.IsFinal(e.state)) {
        const double g = e.g + lat_.final_graph[e.state], a = e.a + lat_.final_ac[e.state];
        if (!has_final || Better(g, a, fg, fa)) {
          has_final = true;
          fg = g;
          fa = a;
          fs = Concat(e.str, lat_.final_str[e.state]);
        }
      }
      for (const Arc &arc : lat_.arcs[e.state]) {
        if (!arc.label) continue;
        auto ws = word_slot.find(arc.label);
        int32_t w;
        if (ws == word_slot.end()) {
          w = static_cast<int32_t>(by_word.size());
          word_slot.emplace(arc.label, w);
          by_word.emplace_back(arc.label, std::vector<Elem>{});
        } else {
          w = ws->second;
        }
        const double g2 = e.g + arc.graph, a2 = e.a + arc.ac;
        const int64_t k = (static_cast<int64_t>(arc.label) << 32) | arc.next;
        auto old = at.find(k);
        std::vector<Elem> &nxt = by_word[w].second;
        if (old == at.end()) {
          at.emplace(k, std::make_pair(w, static_cast<int32_t>(nxt.size())));
          nxt.push_back(Elem{arc.next, g2, a2, Concat(e.str, arc.str)});
        } else {
          Elem &o = nxt[old->second.second];
          if (Better(g2, a2, o.g, o.a)) o = Elem{arc.next, g2, a2, Concat(e.str, arc.str)};
        }
      }
    }
    if (has_final) {
      out_->final_graph[sid] = fg;
      out_->final_ac[sid] = fa;
      out_->final_str[sid] = fs;
    }
    std::sort(by_word.begin(), by_word.end(),
              [](const auto &x, const auto &y) { return x.first < y.first; });
    for (auto &wn : by_word) {
      std::vector<Elem> nxt = OfSubset(wn.second);
      if (nxt.empty()) continue;
      const Elem *m = &nxt[0];
      for (const Elem &e : nxt)
        if (e.g + e.a < m->g + m->a || (e.g + e.a == m->g + m->a && e.g < m->g)) m = &e;
      const double g0 = m->g, a0 = m->a;
      // the common prefix of the elements' strings goes on the arc
      int32_t n = std::numeric_limits<int32_t>::max();
      for (const Elem &e : nxt) n = std::min(n, strings_->Length(e.str));
      strings_->Get(nxt[0].str, &buf_);
      for (const Elem &e : nxt) {
        if (n == 0) break;
        strings_->Get(e.str, &tids_);
        int32_t i = 0;
        while (i < n && tids_[i] == buf_[i]) i++;
        n = i;
      }
      const int32_t prefix = strings_->Prefix(nxt[0].str, n);
      std::vector<Elem> residual;
      residual.reserve(nxt.size());
      for (const Elem &e : nxt) {
        int32_t r = e.str;
        if (n) {
          strings_->Get(e.str, &tids_);
          r = strings_->Extend(0, tids_.begin() + n, tids_.end());
        }
        residual.push_back(Elem{e.state, e.g - g0, e.a - a0, r});
      }
      const int32_t dest = Reach(std::move(residual), here + g0 + a0);
      if (too_large_) return;
      if (dest >= 0) out_->arcs[sid].push_back(Arc{wn.first, dest, g0, a0, prefix});
    }
  }

  const Lattice &lat_;
  Strings *strings_;
  double beam_, limit_ = kInfD;
  int64_t max_states_;
  bool too_large_ = false;
  Lattice *out_ = nullptr;
  std::vector<std::vector<Closure>> memo_;
  std::vector<Cell> cells_;
  std::vector<double> beta_, forward_, rest_;
  std::vector<std::vector<Elem>> elems_of_;
  std::unordered_map<std::vector<int64_t>, int32_t, VecHash> subsets_;
  std::unordered_map<int32_t, int32_t> where_;
  std::vector<int64_t> key_, buf_, tids_;
  std::priority_queue<std::pair<double, int32_t>, std::vector<std::pair<double, int32_t>>,
                      std::greater<std::pair<double, int32_t>>>
      heap_;
};

struct Result {
  Strings strings;
  Lattice lat;
};

}  // namespace

extern "C" {

// Prunes to `prune_beam`, then determinizes within `beam` (beam < 0: prunes only) the lattice
// given as arrays; arcs src/dst/label/graph/ac with strings tids[str_off[i] : str_off[i] +
// str_len[i]]; finals per state (final_graph inf: not final) with strings the same way. rc: 0
// ok, 3 too many states, 4 a cycle. The result stays in *out until hasr_det_free.
int hasr_det_run(int32_t num_states, int32_t start, int64_t num_arcs, const int32_t *src,
                 const int32_t *dst, const int32_t *label, const double *graph,
                 const double *ac, const int64_t *str_off, const int32_t *str_len,
                 const double *final_graph, const double *final_ac,
                 const int64_t *final_off, const int32_t *final_len, const int64_t *tids,
                 double prune_beam, double beam, int64_t max_states, void **out) {
  auto *res = new Result();
  *out = res;
  Lattice in;
  for (int32_t s = 0; s < num_states; s++) in.AddState();
  in.start = start;
  std::vector<int64_t> buf;
  for (int64_t i = 0; i < num_arcs; i++) {
    buf.assign(tids + str_off[i], tids + str_off[i] + str_len[i]);
    in.arcs[src[i]].push_back(Arc{label[i], dst[i], graph[i], ac[i], res->strings.Intern(buf)});
  }
  for (int32_t s = 0; s < num_states; s++) {
    if (std::isinf(final_graph[s])) continue;
    in.final_graph[s] = final_graph[s];
    in.final_ac[s] = final_ac[s];
    buf.assign(tids + final_off[s], tids + final_off[s] + final_len[s]);
    in.final_str[s] = res->strings.Intern(buf);
  }
  bool cycle = false;
  Lattice pruned = Prune(in, prune_beam, &cycle);
  if (cycle) return 4;
  if (beam < 0) {
    res->lat = std::move(pruned);
    return 0;
  }
  Determinizer det(pruned, &res->strings, beam, max_states);
  return det.Run(&res->lat);
}

void hasr_det_sizes(void *r, int32_t *num_states, int32_t *start, int64_t *num_arcs,
                    int64_t *num_tids) {
  const auto *res = static_cast<Result *>(r);
  *num_states = static_cast<int32_t>(res->lat.arcs.size());
  *start = res->lat.start;
  int64_t a = 0, t = 0;
  for (size_t s = 0; s < res->lat.arcs.size(); s++) {
    for (const Arc &arc : res->lat.arcs[s]) {
      a++;
      t += res->strings.Length(arc.str);
    }
    if (res->lat.IsFinal(static_cast<int32_t>(s)))
      t += res->strings.Length(res->lat.final_str[s]);
  }
  *num_arcs = a;
  *num_tids = t;
}

void hasr_det_get(void *r, int32_t *src, int32_t *dst, int32_t *label, double *graph,
                  double *ac, int64_t *str_off, int32_t *str_len, double *final_graph,
                  double *final_ac, int64_t *final_off, int32_t *final_len, int64_t *tids) {
  const auto *res = static_cast<Result *>(r);
  int64_t a = 0, t = 0;
  auto put = [&](int32_t id, int64_t *off, int32_t *len) {
    const auto &s = res->strings.Get(id);
    *off = t;
    *len = static_cast<int32_t>(s.size());
    for (int64_t x : s) tids[t++] = x;
  };
  for (size_t s = 0; s < res->lat.arcs.size(); s++) {
    for (const Arc &arc : res->lat.arcs[s]) {
      src[a] = static_cast<int32_t>(s);
      dst[a] = arc.next;
      label[a] = arc.label;
      graph[a] = arc.graph;
      ac[a] = arc.ac;
      put(arc.str, &str_off[a], &str_len[a]);
      a++;
    }
    final_graph[s] = res->lat.final_graph[s];
    final_ac[s] = res->lat.final_ac[s];
    if (res->lat.IsFinal(static_cast<int32_t>(s))) {
      put(res->lat.final_str[s], &final_off[s], &final_len[s]);
    } else {
      final_off[s] = t;
      final_len[s] = 0;
    }
  }
}

void hasr_det_free(void *r) { delete static_cast<Result *>(r); }

}  // extern "C"

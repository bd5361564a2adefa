# The any-Kaldi-dir recipe's --chain true (egs/kaldi_dir/s5/run.sh; local/chain/run_tdnn.sh),
# sourced by utils/recipe_lib.sh:
#   check_chain_options    refused before any stage where it cannot finish (no G.fst), or
#                          --chain-lats is none of auto, true, false
#   resolve_chain_lats     --chain-lats: $chain_lat_args, the numerator's lattices or none
#   make_chain_lat_data    data/train_gmm (the GMM's own features) and whether they fit it
#   set_chain_args         $chain_args: local/chain/run_tdnn.sh's options and arguments

# --chain true (local/chain/run_tdnn.sh on the hybrid's lang dir and alignment): its graph needs
# a G.fst. Where --lang has none (Kaldi's data/lang; the LM in data/lang_test_tg, as in yesno
# and mini_librispeech), $lang_test becomes the Kaldi dir's data/lang* dir that has one, the
# words of --graph and --lang's phones, said; refused before any stage runs where there is none
# (with --ali none the recipe makes data/lang_test with one)
check_chain_options() {
  check_choice chain_lats "${chain_lats:-auto}" auto true false
  [ "${chain:-false}" == true ] && [ $gmm == true ] || return 0
  case " ${chain_opts:-} " in *" --lang-test"*) return 0 ;; esac
  [ "$lang_test" != data/lang_test ] || return 0  # (stage 0 makes it: --lm-arpa, --lm-text)
  local d
  if [ ! -f "$lang_test/G.fst" ] && [ "$lang_dir" != data/lang ]; then  # (never one made here)
    for d in "$kaldi_dir"/data/lang*/; do
      d=${d%/}
      if [ -f "$d/G.fst" ] && cmp -s "$d/words.txt" "$graph_dir/words.txt" && \
          cmp -s "$d/phones.txt" "$lang_dir/phones.txt"; then
        echo "$0: --chain true: $lang has no G.fst: the chain graph's LM from $d (the words of" \
          "$graph, $lang's phones; --chain-opts \"--lang-test DIR\" for another)"
        lang_test=$d; return 0
      fi
    done
  fi
  if [ ! -f "$lang_test/G.fst" ]; then  # (data/lang, made from a dict dir beside a GMM, has none)
    echo "$0: --chain true: its graph (utils/mkgraph.sh) needs a G.fst, and $lang_test has none:" \
      "give --lm-arpa <an ARPA LM> (or --lm-text <sentences>), or --chain-opts \"--lang-test" \
      "<a lang dir with one, e.g. $kaldi_dir/data/lang_test>\"" >&2
    exit 1
  fi
}

# --chain-lats auto|true|false: the chain numerator from the lattices of the training graphs that
# --ali's GMM makes (local/chain/run_tdnn.sh --lat-data data/train_gmm; steps/align_si.sh
# --generate-lats true: what Kaldi's chain recipes take from align_fmllr_lats.sh; on polish 4.7%
# fewer errors than from the alignment, docs/chain.md), on the GMM's own features
# (data/train_gmm, make_chain_lat_data), with its trans.* where --ali is a SAT dir, unknown words
# as its alignment had them (the OOV word). Sets chain_lat_args (empty: the alignment is the
# numerator). auto: where --ali's final.mdl is a GMM whose features can be made here (recorded
# in data/train_gmm/gmm_check), else the alignment with a note; true: an error where not.
resolve_chain_lats() {
  chain_lat_args=()
  check_choice chain_lats "$chain_lats" auto true false
  [ "${chain:-false}" == true ] && [ "$chain_lats" != false ] || return 0
  local why= check=data/train_gmm/gmm_check
  case " ${chain_opts:-} " in *" --lat-dir"*|*" --lat-data"*) return 0 ;; esac  # (its own)
  [ $gmm == false ] && why="there is no GMM (--ali none)"
  [ -z "$why" ] && [ "$(json_get.py data/kaldi_dir.json ali_model_is_gmm 2>/dev/null)" == false ] &&
    why="$ali/final.mdl is not a GMM"
  [ -z "$why" ] && [ "$(head -n 1 $check 2>/dev/null)" == no ] && why="$(tail -n +2 $check)"
  if [ -n "$why" ]; then
    [ "$chain_lats" == true ] && {
      echo "$0: --chain-lats true: $why; give --chain-lats false (the alignment as the numerator)" >&2
      exit 1; }
    echo "$0: the chain numerator is the alignment, not lattices of a GMM: $why"
    return 0
  fi
  local opts="--normalize-unknown false"  # (as the GMM's alignment, the chain tree's and den.fst's)
  [ -f "$kaldi_dir/$ali/trans.1" ] && opts="$opts --transform-dir $kaldi_dir/$ali"
  chain_lat_args=(--lat-data data/train_gmm --lat-opts "$opts")
}

# make_chain_lat_data: data/train_gmm for resolve_chain_lats' lattices (local/make_gmm_data.sh:
# --train's utterances with MFCCs of the Kaldi dir's conf/mfcc.conf at the audio's rate, or its
# own features with --use-kaldi-feats true; run.sh --fmllr true makes it in stage 1), then
# whether they fit the GMM (gmm_compute_likes.py --check-only: e.g. a GMM on MFCC + pitch does
# not take plain MFCCs) into data/train_gmm/gmm_check; chain_lat_args and chain_args anew.
make_chain_lat_data() {
  [ ${#chain_lat_args[@]} -gt 0 ] || return 0
  local check=data/train_gmm/gmm_check conf=data/mfcc_gmm.conf msg
  if [ ! -s data/train_gmm/feats.scp ] || [ ! -s data/train_gmm/cmvn.scp ]; then
    [ $use_kaldi_feats == true ] || make_feat_config.py --kaldi-conf="$kaldi_dir/conf/mfcc.conf" \
      --recipe-conf=conf/mfcc.conf mfcc $conf data/train data/test
    $localdir/make_gmm_data.sh --nj $nj --use-kaldi-feats $use_kaldi_feats --mfcc-config $conf \
      "$kaldi_dir" $train data/train_gmm
    rm -f $check
  fi
  case "$(head -n 1 $check 2>/dev/null)" in ok|no) ;; *)  # (not checked, or cut short: again)
    if msg=$(gmm_compute_likes.py --check-only --feature-pipeline="$kaldi_dir/$ali" \
        $([ -f "$kaldi_dir/$ali/trans.1" ] && echo "--transform-dir=$kaldi_dir/$ali") \
        "$kaldi_dir/$ali/final.mdl" data/train_gmm ark:/dev/null 2>&1); then
      echo ok > $check.tmp
    else
      printf 'no\nthe features made here do not fit its GMM: %s\n' \
        "$(echo "$msg" | grep -iE 'error' | tail -n 1)" > $check.tmp
    fi
    mv -f $check.tmp $check ;;
  esac
  resolve_chain_lats; set_chain_args
}

# set_chain_args: $chain_args, local/chain/run_tdnn.sh's options and arguments from run.sh's: the
# hybrid's lang dir and alignment (the GMM's, or the flat start's of its CD tree), the lattices
# of resolve_chain_lats, --chain-opts last (they win)
set_chain_args() {
  local chain_ali=$kaldi_dir/$ali
  [ $gmm == true ] || { chain_ali=exp/flat/ali_final; [ $num_leaves -gt 0 ] && chain_ali=exp/tri_ali; }
  # shellcheck disable=SC2206
  chain_args=("${dec[@]}" --lang-test "$lang_test" --model-config "$chain_model_config"
    "${chain_lat_args[@]}" --train-opts "$train_opts${chain_train_opts:+ $chain_train_opts}"
    $chain_opts "$lang_dir" "$chain_ali" exp/chain/tdnn)
}

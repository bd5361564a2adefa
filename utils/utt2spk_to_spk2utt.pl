#!/usr/bin/env perl
# utils/utt2spk_to_spk2utt.pl (Kaldi's interface): reads utt2spk lines "utt spk" from the
# files given or stdin and writes spk2utt lines "spk utt1 utt2 ..." to stdout, speakers in
# order of first appearance, utterances in input order.
#  e.g.: utils/utt2spk_to_spk2utt.pl data/train/utt2spk > data/train/spk2utt
use strict;
use warnings;

my (%utts, @order);
while (my $line = <>) {
  my @f = split(" ", $line);
  next unless @f;
  die "utt2spk_to_spk2utt.pl: $ARGV:$.: expected 'utt spk', got '" . join(" ", @f) . "'\n"
    if @f != 2;
  push @order, $f[1] unless exists $utts{$f[1]};
  push @{$utts{$f[1]}}, $f[0];
} continue {
  close ARGV if eof;
}
print "$_ " . join(" ", @{$utts{$_}}) . "\n" for @order;

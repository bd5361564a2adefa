#!/usr/bin/env perl
# utils/spk2utt_to_utt2spk.pl (Kaldi's interface): reads spk2utt lines "spk utt1 utt2 ..."
# from the files given or stdin and writes "utt spk" lines to stdout.
#  e.g.: utils/spk2utt_to_utt2spk.pl data/train/spk2utt > data/train/utt2spk
use strict;
use warnings;

while (my $line = <>) {
  my @f = split(" ", $line);
  next unless @f;
  die "spk2utt_to_utt2spk.pl: $ARGV:$.: speaker '$f[0]' has no utterances\n" if @f < 2;
  my $spk = shift @f;
  print "$_ $spk\n" for @f;
} continue {
  close ARGV if eof;  # $. counts lines per file
}

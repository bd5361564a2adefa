#!/usr/bin/env perl
# utils/filter_scp.pl (Kaldi's interface and behaviour):
#   utils/filter_scp.pl [--exclude] [-f <field>] <id-list> [<in-scp>...]  > out
# prints the lines of <in-scp> (or stdin) whose field <field> (default 1) is (with --exclude:
# is not) the first field of a line of <id-list>; input order is kept.
#  e.g.: utils/filter_scp.pl data/train/split4/1/utt2spk data/train/feats.scp
use strict;
use warnings;

my $usage = "Usage: utils/filter_scp.pl [--exclude] [-f <field>] <id-list> [<in-scp>...]\n";
my ($exclude, $field) = (0, 1);
while (@ARGV && $ARGV[0] =~ /^-./) {
  my $opt = shift @ARGV;
  if ($opt eq "--exclude") { $exclude = 1; }
  elsif ($opt eq "-f" && @ARGV) { $field = shift @ARGV; }
  elsif ($opt =~ /^-f(\d+)$/) { $field = $1; }
  else { die "filter_scp.pl: unknown option $opt\n$usage"; }
}
die $usage unless @ARGV;
die "filter_scp.pl: -f needs a field number >= 1, got '$field'\n" unless $field =~ /^\d+$/ && $field >= 1;
my $idlist = shift @ARGV;
my %ids;
open(my $ids_fh, "<", $idlist) or die "filter_scp.pl: cannot open $idlist: $!\n";
while (<$ids_fh>) {
  my @f = split;
  $ids{$f[0]} = 1 if @f;
}
close($ids_fh);
push @ARGV, "-" unless @ARGV;
for my $name (@ARGV) {
  my $fh;
  if ($name eq "-") { $fh = \*STDIN; }
  else { open($fh, "<", $name) or die "filter_scp.pl: cannot open $name: $!\n"; }
  while (my $line = <$fh>) {
    my @f = split(" ", $line);
    die "filter_scp.pl: $name:$.: line has no field $field\n" if @f < $field;
    if ((exists $ids{$f[$field - 1]} ? 1 : 0) != $exclude) {
      $line .= "\n" unless $line =~ /\n$/;
      print $line;
    }
  }
  close($fh) unless $name eq "-";
}

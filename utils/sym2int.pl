#!/usr/bin/env perl
# Maps symbols to integers with a symbol table (words.txt, phones.txt: "symbol integer" lines).
# Same interface as Kaldi's utils/sym2int.pl.
use strict;
use warnings;

my $usage = "Usage: sym2int.pl [--map-oov <oov-symbol>] [-f <field-range>] <symtab> [<input>...] > output\n" .
  "  <field-range>: 2, 2-, 1-3 or -3 (1-based, inclusive; 1:3 also accepted); default all fields\n" .
  "e.g.: utils/sym2int.pl --map-oov '<UNK>' -f 2- data/lang/words.txt data/test/text\n";
my ($map_oov, $first, $last);
while (@ARGV && $ARGV[0] =~ /^-/) {
  my $opt = shift @ARGV;
  if ($opt eq "--map-oov") {
    $map_oov = shift @ARGV;
  } elsif ($opt eq "-f") {
    my $spec = shift @ARGV // "";
    if ($spec =~ /^(\d+)$/) { ($first, $last) = ($1, $1); }
    elsif ($spec =~ /^(\d*)[-:](\d*)$/ && ($1 ne "" || $2 ne "")) {
      $first = $1 eq "" ? undef : $1; $last = $2 eq "" ? undef : $2;
    } else { die "sym2int.pl: bad argument to -f: '$spec'\n$usage"; }
  } else { die "sym2int.pl: unknown option $opt\n$usage"; }
}
my $symtab = shift @ARGV;
defined $symtab or die $usage;
my %sym2int;
open(my $fh, "<", $symtab) or die "sym2int.pl: cannot open symbol table $symtab: $!\n";
while (my $line = <$fh>) {
  my @f = split(" ", $line);
  @f == 2 && $f[1] =~ /^\d+$/ or die "sym2int.pl: $symtab:$.: expected 'symbol integer', got: $line";
  $sym2int{$f[0]} = $f[1] + 0;
}
close($fh);
if (defined $map_oov && $map_oov !~ /^\d+$/) {
  defined $sym2int{$map_oov} or die "sym2int.pl: OOV symbol '$map_oov' is not in $symtab\n";
  $map_oov = $sym2int{$map_oov};
}
my $warned = 0;
while (my $line = <>) {
  my @f = split(" ", $line);
  for my $i (0 .. $#f) {
    my $pos = $i + 1;
    next if (defined $first && $pos < $first) || (defined $last && $pos > $last);
    my $id = $sym2int{$f[$i]};
    if (!defined $id) {
      defined $map_oov or die "sym2int.pl: undefined symbol '$f[$i]' (line $., field $pos)\n";
      print STDERR "sym2int.pl: replacing $f[$i] with $map_oov\n" if $warned++ < 20;
      $id = $map_oov;
    }
    $f[$i] = $id;
  }
  print join(" ", @f), "\n";
}

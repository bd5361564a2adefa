#!/usr/bin/env perl
# Maps integers to symbols with a symbol table (words.txt, phones.txt: "symbol integer" lines).
# Same interface and output as Kaldi's utils/int2sym.pl (each field followed by a space).
use strict;
use warnings;

my $usage = "Usage: int2sym.pl [-f <field-range>] <symtab> [<input>...] > output\n" .
  "  <field-range>: 2, 2-, 1-3 or -3 (1-based, inclusive; 1:3 also accepted); default all fields\n" .
  "e.g.: utils/int2sym.pl -f 2- data/lang/words.txt exp/mono/decode/scoring/10.tra\n";
my ($first, $last);
if (@ARGV && $ARGV[0] eq "-f") {
  shift @ARGV;
  my $spec = shift @ARGV // "";
  if ($spec =~ /^(\d+)$/) { ($first, $last) = ($1, $1); }
  elsif ($spec =~ /^(\d*)[-:](\d*)$/ && ($1 ne "" || $2 ne "")) {
    $first = $1 eq "" ? undef : $1; $last = $2 eq "" ? undef : $2;
  } else { die "int2sym.pl: bad argument to -f: '$spec'\n$usage"; }
}
my $symtab = shift @ARGV;
defined $symtab or die $usage;
my %int2sym;
open(my $fh, "<", $symtab) or die "int2sym.pl: cannot open symbol table $symtab: $!\n";
while (my $line = <$fh>) {
  my @f = split(" ", $line);
  @f == 2 && $f[1] =~ /^\d+$/ or die "int2sym.pl: $symtab:$.: expected 'symbol integer', got: $line";
  $int2sym{$f[1] + 0} = $f[0];
}
close($fh);
while (my $line = <>) {
  my @f = split(" ", $line);
  for my $i (0 .. $#f) {
    my $pos = $i + 1;
    if (!((defined $first && $pos < $first) || (defined $last && $pos > $last))) {
      $f[$i] =~ /^\d+$/ or die "int2sym.pl: non-integer '$f[$i]' (line $., field $pos)\n";
      my $s = $int2sym{$f[$i] + 0};
      defined $s or die "int2sym.pl: integer $f[$i] is not in $symtab (line $., field $pos)\n";
      $f[$i] = $s;
    }
    print $f[$i], " ";
  }
  print "\n";
}

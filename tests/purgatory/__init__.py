"""Tests of the purgatory package: timing wheel, delayed operations, purgatory, testing kit."""

int gemmar_reference_anchor = 0;

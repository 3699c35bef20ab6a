int gemmar_model_anchor = 0;

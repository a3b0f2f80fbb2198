package io.kvindex.index.redis;

import java.util.ArrayList;
import java.util.List;

/**
 * lookup.lua's call: the lookup of one group in one call, for the candidates' pod fields and the
 * prompt's block fields.
 *
 * @param group the index group
 * @param podFields the candidates' pod fields, in candidate order
 * @param blockFields the prompt's block fields, in prompt order
 */
record LookupCall(int group, List<byte[]> podFields, List<byte[]> blockFields)
    implements ScriptCall.Source {
  /** The call for a group's candidates. */
  static LookupCall of(CandidateGroup group, List<byte[]> blockFields) {
    List<byte[]> pods = new ArrayList<>(group.keys.size());
    group.keys.forEach(k -> pods.add(k.field()));
    return new LookupCall(group.g, pods, blockFields);
  }

  @Override
  public ScriptCall on(KeySchema keys) {
    return ScriptCall.of(Scripts.LOOKUP)
        .key("pods", keys.pods(group))
        .key("blocks", keys.blocks(group))
        .arg("candidates", podFields.size())
        .rest("fields", podFields)
        .rest("fields", blockFields)
        .build();
  }
}

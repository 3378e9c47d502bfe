import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.common.TopicPartition;

/**
 * The maps Kafka 3.3.1 writes its root checkpoints from, built with the broker's own libraries
 * (kafka-clients' TopicPartition, the scala-library it ships, this JVM's ConcurrentHashMap), for
 * key lists read from stdin; prints each map's iteration order. tests/broker_order/test_oracle.py
 * compares formats.scala_order with it.
 *
 * Input, one case a line: N, then tab-separated topic and partition pairs: the keys in insertion
 * order, the first N of them also the cleaner checkpoint file's current order. Output, four lines
 * a case, tab-separated "topic partition" pairs after a tag: rp (HashMap.from a View.Map of known
 * size: LogManager's `.map`), ls (HashMap.from a View.Filter, no known size: its `.collect`), hw
 * (an AnyRefMap filled in a ConcurrentHashMap's order: checkpointHighWatermarks), ck (the file
 * read with toMap, filtered, then the other keys added one by one: updateCheckpoints).
 */
public class ScalaOrderOracle {
    @SuppressWarnings({"rawtypes", "unchecked"})
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        scala.Function1 identity = new scala.runtime.AbstractFunction1() {
            public Object apply(Object t) { return t; }
        };
        scala.Function1 always = new scala.runtime.AbstractFunction1() {
            public Object apply(Object t) { return Boolean.TRUE; }
        };
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split("\t", -1);
            int existing = Integer.parseInt(f[0]);
            List<TopicPartition> keys = new ArrayList<>();
            for (int i = 1; i + 1 < f.length; i += 2)
                keys.add(new TopicPartition(f[i], Integer.parseInt(f[i + 1])));

            scala.collection.mutable.ArrayBuffer all = new scala.collection.mutable.ArrayBuffer();
            for (TopicPartition tp : keys) all.addOne(new scala.Tuple2(tp, 0L));
            emit(out, "rp", scala.collection.mutable.HashMap$.MODULE$.from(new scala.collection.View.Map(all, identity)).iterator());
            scala.collection.View filtered = new scala.collection.View.Filter(all, always, false);
            if (filtered.knownSize() != -1) throw new IllegalStateException("a filter has no known size");
            emit(out, "ls", scala.collection.mutable.HashMap$.MODULE$.from(filtered).iterator());

            ConcurrentHashMap<TopicPartition, Object> partitions = new ConcurrentHashMap<>();
            for (TopicPartition tp : keys) partitions.put(tp, 0L);
            scala.collection.mutable.AnyRefMap hws = new scala.collection.mutable.AnyRefMap();
            for (TopicPartition tp : partitions.keySet()) hws.put(tp, 0L);
            emit(out, "hw", hws.iterator());

            scala.collection.mutable.ArrayBuffer file = new scala.collection.mutable.ArrayBuffer();
            for (TopicPartition tp : keys.subList(0, existing)) file.addOne(new scala.Tuple2(tp, 0L));
            scala.collection.immutable.Map m = scala.collection.immutable.Map$.MODULE$.from(file);
            m = (scala.collection.immutable.Map) m.filter(always);
            for (TopicPartition tp : keys.subList(existing, keys.size()))
                m = (scala.collection.immutable.Map) m.updated(tp, 0L);
            emit(out, "ck", m.iterator());
        }
        System.out.print(out);
    }

    private static void emit(StringBuilder out, String tag, scala.collection.Iterator<?> it) {
        out.append(tag);
        while (it.hasNext()) {
            TopicPartition tp = (TopicPartition) ((scala.Tuple2<?, ?>) it.next())._1();
            out.append('\t').append(tp.topic()).append('\t').append(tp.partition());
        }
        out.append('\n');
    }
}
